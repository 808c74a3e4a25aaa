"""Who the agent is on the host: never root.

When the harness runs as root, every sandbox (agent, setup commands, canaries, checks) runs as
one unprivileged host uid/gid: the user `assay-sandbox` when the machine has one (create it
with `useradd --system --no-create-home assay-sandbox` to make the uid official), else uid and
gid 65533 (below `nobody`, outside the ranges distributions hand out). When the harness is not
root, the sandbox runs as the harness's own uid, which is unprivileged already.

The agent's writable folders are handed over to that uid before each command (`hand_over`),
so what it writes is owned by it on the host, and a setuid file it makes is setuid to an
unprivileged user at worst (and stripped by `harness.sandbox.neutralise` before the harness
reads the tree).
"""

from __future__ import annotations

import functools
import os
import pwd
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from harness.sandbox.neutralise import walk_tree

SANDBOX_USER = "assay-sandbox"
"""A host user whose uid/gid the sandbox takes when it exists."""

FALLBACK_ID = 65533
"""The uid and gid when there is no `assay-sandbox` user (and the harness is root)."""

SANDBOX_NAME = "assay"
"""The user name the sandbox's /etc/passwd gives that uid when the host has no entry for it."""


@dataclass(frozen=True)
class SandboxIds:
    """The host uid/gid sandboxed processes run as."""

    uid: int
    gid: int
    source: str
    """Where they come from, for run.json: "user assay-sandbox", "uid 65533", "the harness's own"."""

    @property
    def switched(self) -> bool:
        """True when the sandbox runs as another uid than the harness (the harness is root)."""
        return self.uid != os.geteuid()


@functools.cache
def sandbox_ids() -> SandboxIds:
    """The host identity of every sandbox started by this harness process."""
    if os.geteuid() != 0:
        return SandboxIds(os.geteuid(), os.getegid(), "the harness's own (not root)")
    try:
        entry = pwd.getpwnam(SANDBOX_USER)
    except KeyError:
        return SandboxIds(
            FALLBACK_ID, FALLBACK_ID, f"uid {FALLBACK_ID} (no {SANDBOX_USER} user on this host)"
        )
    if entry.pw_uid == 0 or entry.pw_gid == 0:
        raise RuntimeError(f"host user {SANDBOX_USER} has uid/gid 0; it must be unprivileged")
    return SandboxIds(entry.pw_uid, entry.pw_gid, f"user {SANDBOX_USER}")


_OWNER: list[int] = []
"""The runner that forked this process as a worker (`harness.batch.executor.procs`), once adopted."""

_TAG = re.compile(r"-p(\d+)(?:w(\d+))?$")
"""The end of a name `owner_tag` gave: `-p<runner>`, or `-p<runner>w<worker>`."""


def owner_tag() -> str:
    """What the mounts and cgroups this process makes are named after (`...-<tag>`), so that a
    later sweep removes them once their maker is gone: `p<pid>` in a runner; in a worker the
    runner that forked it and the worker itself, `p<runner>w<worker>`. Either one gone makes them
    abandoned: a worker killed on its own leaves its trials behind while its runner lives on, and a
    worker that dies with its runner may linger a moment as a zombie."""
    return f"p{_OWNER[0]}w{os.getpid()}" if _OWNER else f"p{os.getpid()}"


def owner_gone(name: str) -> bool:
    """Whether a process a mount or cgroup is named after (`owner_tag`) no longer exists: what it
    left is then abandoned. False for a name no harness gave."""
    found = _TAG.search(name)
    if found is None:
        return False
    return any(_gone(int(pid)) for pid in found.groups() if pid is not None)


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


def adopt(runner: int) -> None:
    """In a worker the runner forked: what this process makes belongs to `runner` as well."""
    _OWNER[:] = [runner]


def passwd_lines(ids: SandboxIds, passwd: str, group: str) -> tuple[str, str]:
    """`passwd` and `group` with an entry for the sandbox's ids added where the host has none
    (tools that look up the current user — git, ssh, `id -un` — then find a name)."""
    uids = {line.split(":")[2] for line in passwd.splitlines() if line.count(":") >= 3}
    gids = {line.split(":")[2] for line in group.splitlines() if line.count(":") >= 2}
    if str(ids.uid) not in uids:
        passwd += f"{SANDBOX_NAME}:x:{ids.uid}:{ids.gid}:assay sandbox:/tmp:/bin/sh\n"
    if str(ids.gid) not in gids:
        group += f"{SANDBOX_NAME}:x:{ids.gid}:\n"
    return passwd, group


def hand_over(root: Path, ids: SandboxIds | None = None) -> int:
    """Give the tree under `root` (and root) to the sandbox's ids; returns how many entries changed.

    Only entries owned by someone else change (an unchanged owner keeps its ctime, which the
    workspace's change detection reads). Symlinks are re-owned themselves, never followed.
    Nothing to do when the sandbox runs as the harness's own uid.
    """
    ids = ids or sandbox_ids()
    if not ids.switched or not root.is_dir() or root.is_symlink():
        return 0
    changed = 0
    st = os.lstat(root)
    if (st.st_uid, st.st_gid) != (ids.uid, ids.gid):
        os.chown(root, ids.uid, ids.gid, follow_symlinks=False)
        changed += 1
    for entry in walk_tree(root):
        if (entry.st.st_uid, entry.st.st_gid) == (ids.uid, ids.gid):
            continue
        if entry.st.st_nlink > 1 and not stat.S_ISDIR(entry.st.st_mode):
            continue  # a hard link may be a file elsewhere on the host: never given away
        os.chown(entry.name, ids.uid, ids.gid, dir_fd=entry.dir_fd, follow_symlinks=False)
        changed += 1
    return changed
