"""unshare: the fallback isolation, from util-linux, for machines where bwrap cannot run.

`unshare` creates the namespaces (mount, network, pid, ipc, uts; a user namespace
mapped to root when the harness is not root); a generated shell script then builds a
fresh root on a tmpfs exactly as bwrap does — the toolchain view read-only, minimal
/dev, fresh /proc with /proc/sys read-only, a private /tmp, the spec's mounts and
overlays, every one of them nosuid and (but the device nodes) nodev — brings loopback
up, and enters it with `chroot` and `setpriv`, which drops every capability, clears the
groups and sets no_new_privs. Under a root harness setpriv also becomes the sandbox's
unprivileged host uid (`harness.sandbox.identity`), to which the script first hands the
writable folders over (`chown --from=0`, symlinks never followed); under a harness that
is not root the process is root only inside a user namespace mapped to the harness's own
uid. Without capabilities it cannot remount, chroot out, or see outside its pid
namespace. `--kill-child` ends the tree when unshare ends. New user namespaces are not
refused (setpriv has no seccomp here): run.json's protections say so.
"""

from __future__ import annotations

import functools
import os
import shlex
import shutil
import subprocess
from pathlib import Path

from harness.sandbox.identity import sandbox_ids
from harness.sandbox.isolation.base import SandboxSpec
from harness.sandbox.isolation.toolchain import (
    DEV_NODES,
    ReadOnly,
    Symlink,
    ViewEntry,
    below_private_tmp,
    toolchain,
)

ROOT_CANDIDATES = (Path("/mnt"), Path("/srv"), Path("/media"), Path("/opt"))
"""Existing folders the new root may be mounted over (only inside the mount namespace)."""

TOOLS = ("unshare", "setpriv", "chroot", "mount", "mkdir", "touch", "ln", "chown", "chmod")
"""Host tools the setup script calls, by absolute path (the spec's PATH is the agent's)."""


def _tool(name: str) -> str:
    found = shutil.which(name, path="/usr/sbin:/usr/bin:/sbin:/bin")
    return found or name


def _new_root(spec: SandboxSpec) -> Path:
    sources = (
        [m.src for m in spec.mounts] + [o.lower for o in spec.overlays] + [o.upper for o in spec.overlays]
    )
    for candidate in ROOT_CANDIDATES:
        if candidate.is_dir() and not any(s == candidate or candidate in s.parents for s in sources):
            return candidate
    raise RuntimeError(
        f"unshare: no folder to build the sandbox root on (tried {', '.join(map(str, ROOT_CANDIDATES))})"
    )


def _bind(src: Path, dest: str, *, writable: bool, is_dir: bool, devices: bool = False) -> list[str]:
    q_src, q_dest = shlex.quote(str(src)), shlex.quote(dest)
    mkdir, mount = _tool("mkdir"), _tool("mount")
    parent = shlex.quote(str(Path(dest).parent))
    make = f"{mkdir} -p {q_dest}" if is_dir else f"{mkdir} -p {parent} && {_tool('touch')} {q_dest}"
    flags = "remount,bind,nosuid" + ("" if devices else ",nodev") + ("" if writable else ",ro")
    return [make, f"{mount} --rbind {q_src} {q_dest}", f"{mount} -o {flags} {q_dest}"]


def _view_lines(entry: ViewEntry, root: str) -> list[str]:
    dest = root + str(entry.target if isinstance(entry, ReadOnly) else entry.path)
    if isinstance(entry, Symlink):
        return [f"{_tool('ln')} -s {shlex.quote(entry.target)} {shlex.quote(dest)}"]
    if entry.path.exists():
        return _bind(entry.path, dest, writable=False, is_dir=entry.path.is_dir())
    return []


def _script(spec: SandboxSpec, root: Path) -> str:
    r = str(root)
    mkdir, mount, ln = _tool("mkdir"), _tool("mount"), _tool("ln")
    ids = sandbox_ids()
    lines = ["set -e", "umask 022"]
    own = [m.src for m in spec.mounts if m.writable] + [o.upper for o in spec.overlays]
    if ids.switched and (own or spec.bind_cwd):
        targets = " ".join([*(['"$(pwd -P)"'] if spec.bind_cwd else []), *(shlex.quote(str(p)) for p in own)])
        lines.append(f"{_tool('chown')} -hR --from=+0 +{ids.uid}:+{ids.gid} -- {targets}")
    lines.append(f"{mount} -t tmpfs -o mode=755,nosuid,nodev assay-root {shlex.quote(r)}")
    view = toolchain()
    for entry in (e for e in view if not below_private_tmp(e)):
        lines += _view_lines(entry, r)
    lines += [
        f"{mkdir} -p {r}/proc && {mount} -t proc proc {r}/proc",
        f"{mount} --bind {r}/proc/sys {r}/proc/sys && {mount} -o remount,bind,ro {r}/proc/sys",
        f"{mkdir} -p {r}/dev && {mount} -t tmpfs -o mode=755,nosuid dev {r}/dev",
    ]
    for node in DEV_NODES:
        if Path("/dev", node).exists():
            lines += _bind(Path("/dev", node), f"{r}/dev/{node}", writable=True, is_dir=False, devices=True)
    lines += [
        f"{ln} -s /proc/self/fd {r}/dev/fd",
        f"{mkdir} -p {r}/dev/shm && {mount} -t tmpfs -o mode=1777,nosuid,nodev shm {r}/dev/shm",
    ]
    if spec.init:  # the namespace's queues, for a server that empties them (`SandboxSpec.init`)
        lines.append(
            f"{mkdir} -p {r}/dev/mqueue && {mount} -t mqueue -o nosuid,nodev,noexec mqueue {r}/dev/mqueue"
        )
    size = f",size={spec.limits.tmp_mb}m" if spec.limits.tmp_mb is not None else ""
    lines += [
        f"{mkdir} -p {r}/tmp {r}/var/tmp && {mount} -t tmpfs -o mode=1777,nosuid,nodev{size} tmp {r}/tmp",
        f"{_tool('chmod')} 1777 {r}/var/tmp",
    ]
    for entry in (e for e in view if below_private_tmp(e)):
        lines += _view_lines(entry, r)
    for overlay in spec.overlays:
        opts = f"lowerdir={overlay.lower},upperdir={overlay.upper},workdir={overlay.work}"
        dest = shlex.quote(r + str(overlay.dest))
        lines.append(
            f"{mkdir} -p {dest} && {mount} -t overlay assay-overlay -o nosuid,nodev,{shlex.quote(opts)} {dest}"
        )
    for each in sorted(spec.mounts, key=lambda m: len(m.dest.parts)):
        lines += _bind(each.src, r + str(each.dest), writable=each.writable, is_dir=each.src.is_dir())
    if spec.bind_cwd:
        q = shlex.quote(r)
        lines += [
            "here=$(pwd -P)",
            f'{mkdir} -p {q}"$here" && {mount} --rbind "$here" {q}"$here"',
            f'{mount} -o remount,bind,nosuid,nodev {q}"$here"',
        ]
    home = shlex.quote(r + str(spec.home))
    if not any(m.dest == spec.home for m in spec.mounts):  # HOME exists, if only inside
        lines.append(f"{mkdir} -p {home} && {_tool('chmod')} {'1777' if ids.switched else '0700'} {home}")
    if not spec.network:
        lines.append(f"{_tool('ip')} link set lo up 2>/dev/null || true")
    become = f" --reuid={ids.uid} --regid={ids.gid}" if ids.switched else ""
    drop = f"{_tool('setpriv')}{become} --inh-caps=-all --bounding-set=-all --no-new-privs --clear-groups"
    # The folder to enter is $1 inside: the spec's, or ("." ) the caller's, taken before chroot.
    if spec.cwd_map is not None:  # the caller's folder, entered where its mount shows it
        src, dest = (shlex.quote(str(p)) for p in spec.cwd_map)
        lines.append(
            f'here=$(pwd -P); case "$here" in {src}|{src}/*) ;; *) echo "assay: $here is outside {src}" >&2; exit 126;; esac'
        )
        lines.append(f'assay_cwd={dest}"${{here#{src}}}"')
    else:
        lines.append(
            "assay_cwd=$(pwd)" if spec.cwd == Path(".") else f"assay_cwd={shlex.quote(str(spec.cwd))}"
        )
    enter = 'cd "$1" && shift && exec "$@"'
    chroot = f'{_tool("chroot")} {shlex.quote(r)} {drop} /bin/sh -c {shlex.quote(enter)} assay-sandbox "$assay_cwd" "$@"'
    if spec.init:  # the command becomes pid 1 in this shell's place
        return "\n".join([*lines, f"exec {chroot}"])
    # Not exec: unshare cannot re-raise a child's death signal, so the shell turns it into 128+N.
    lines += ["set +e", chroot, "exit $?"]
    return "\n".join(lines)


@functools.cache
def _probe() -> str | None:
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        return f"missing tools: {', '.join(missing)}"
    spec = SandboxSpec(argv=["/bin/true"], cwd=Path("/"), env={}, home=Path("/tmp"))
    try:
        done = subprocess.run(
            UnshareIsolation().wrap(spec), env={}, capture_output=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unshare does not start: {exc}"
    if done.returncode != 0:
        return f"unshare cannot build a sandbox here (exit {done.returncode}): {done.stderr.decode(errors='replace').strip()}"
    return None


class UnshareIsolation:
    """Namespaces from util-linux unshare, a tmpfs root, capabilities dropped."""

    name = "unshare"
    ends_tree = True
    """Its own pid, network and mount namespaces (`--die-with-parent` / `--kill-child`): see `confines`."""

    def probe(self) -> str | None:
        return _probe()

    @property
    def enforces_network_off(self) -> bool:
        return True

    def wrap(self, spec: SandboxSpec) -> list[str]:
        flags = ["--mount", "--pid", "--ipc", "--uts", "--fork", "--kill-child", "--propagation", "private"]
        if not spec.network:
            flags.append("--net")
        if os.geteuid() != 0:
            flags += ["--user", "--map-root-user"]
        script = _script(spec, _new_root(spec))
        return [_tool("unshare"), *flags, "--", "/bin/sh", "-c", script, "assay-unshare", *spec.argv]
