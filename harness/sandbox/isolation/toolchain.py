"""The agent's view of the machine: what every sandbox shows read-only besides the spec's mounts.

Both real isolations (bwrap, unshare) build a fresh, empty root and put into it only
this toolchain view plus the spec's own mounts, so anything not listed here — the
project folder, the run directory, the host's home, SSH keys, cloud credentials,
`/etc/shadow`, other trials — simply does not exist inside.
"""

from __future__ import annotations

import atexit
import functools
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from harness.sandbox.identity import passwd_lines, sandbox_ids

TOP_LEVEL = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32")
"""Top-level folders of the toolchain, bound read-only (or recreated as symlinks)."""

ETC_FILES = (
    "passwd",
    "group",
    "hosts",
    "host.conf",
    "nsswitch.conf",
    "resolv.conf",
    "localtime",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "alternatives",
    "ssl",
    "ca-certificates",
    "ca-certificates.conf",
    "pki",
    "mime.types",
    "os-release",
    "debian_version",
    "protocols",
    "services",
    "gai.conf",
    "inputrc",
    "profile",
    "bash.bashrc",
    "environment",
    "locale.alias",
    "timezone",
    "terminfo",
    "npmrc",
    "gitconfig",
    "magic",
    "magic.mime",
)
"""The minimal /etc: name resolution, linker, certificates, user names. No shadow, no keys."""

DEV_NODES = ("null", "zero", "full", "random", "urandom", "tty")
"""Device nodes a sandbox gets (the unshare fallback binds only these)."""


@dataclass(frozen=True)
class ReadOnly:
    """A host path shown read-only (at `dest`, by default the same path)."""

    path: Path
    dest: Path | None = None

    @property
    def target(self) -> Path:
        """Where it appears inside the sandbox."""
        return self.dest or self.path


@dataclass(frozen=True)
class Symlink:
    """A symlink recreated inside (e.g. /bin -> usr/bin on merged-/usr systems)."""

    path: Path
    target: str


ViewEntry = ReadOnly | Symlink


def _python_roots() -> list[Path]:
    """The running interpreter's installation and venv (they may live under the host's home)."""
    roots: list[Path] = []
    for raw in (sys.base_prefix, sys.prefix):
        root = Path(raw).resolve()
        if root.parts[1:2] and root.parts[1] in TOP_LEVEL:
            continue  # already inside a bound top-level folder
        if root not in roots:
            roots.append(root)
    return roots


@functools.cache
def etc_snapshot() -> Path:
    """A private copy of the minimal /etc, made once per harness process and bound as /etc.

    One bind instead of thirty: each mount costs a sandbox start about 0.2 ms. Symlinks are
    copied as links (e.g. /etc/alternatives), never followed out of /etc.
    """
    from harness.artifacts.lock import host_tmp
    from harness.sandbox.pathsafe import copy_tree

    folder = host_tmp("etc", memory=True)
    atexit.register(shutil.rmtree, folder, True)
    for name in ETC_FILES:
        src = Path("/etc") / name
        dest = folder / name
        if src.is_symlink():
            target = src.resolve()
            if target.is_file():  # e.g. resolv.conf -> /run/...: the content, not a dangling link
                shutil.copyfile(target, dest)
            elif target.is_dir():
                copy_tree(target, dest)
        elif src.is_dir():
            copy_tree(src, dest)
        elif src.is_file():
            shutil.copyfile(src, dest)
    passwd, group = folder / "passwd", folder / "group"
    if passwd.is_file() and group.is_file():  # a name for the sandbox's uid, where the host has none
        text = passwd_lines(
            sandbox_ids(), passwd.read_text(errors="replace"), group.read_text(errors="replace")
        )
        passwd.write_text(text[0])
        group.write_text(text[1])
    nss = folder / "nsswitch.conf"
    if nss.is_file():
        nss.write_text(files_only(nss.read_text(errors="replace")))
    folder.chmod(0o755)
    return folder


ACCOUNT_DATABASES = frozenset({"passwd", "group", "shadow", "gshadow", "initgroups"})


def files_only(nsswitch: str) -> str:
    """nsswitch.conf with users and groups looked up in /etc's files alone (the snapshot's passwd
    and group, which name the sandbox's uid): the daemons other sources ask (systemd's userdb,
    sssd, nscd, LDAP) are not reachable in a sandbox, and loading their modules cost every
    program that looks up a user (setpriv does, for its numeric --reuid) about 0.7 ms."""
    lines = []
    for line in nsswitch.splitlines():
        database, colon, _sources = line.partition(":")
        if colon and database.strip() in ACCOUNT_DATABASES and not database.startswith("#"):
            line = f"{database.strip()}: files"
        lines.append(line)
    return "\n".join(lines) + "\n"


PRIVATE_TMP = (Path("/tmp"), Path("/var/tmp"))
"""Folders every sandbox gets fresh and empty; a toolchain path below them is bound after them."""


def below_private_tmp(entry: ViewEntry) -> bool:
    """True when the entry lives under a private tmp folder and must be bound after its tmpfs.

    A project checked out under /tmp (CI clones often are) has its virtualenv there; bound
    before the private /tmp is mounted, it would vanish under it and the sandbox could not
    start its own interpreter.
    """
    where = entry.target if isinstance(entry, ReadOnly) else entry.path
    return any(where == tmp or tmp in where.parents for tmp in PRIVATE_TMP)


def toolchain(extra: tuple[Path, ...] = ()) -> list[ViewEntry]:
    """The read-only toolchain view, host-specific: what exists here, as it exists here."""
    entries: list[ViewEntry] = []
    for name in TOP_LEVEL:
        top = Path("/") / name
        if top.is_symlink():
            entries.append(Symlink(top, str(top.readlink())))
        elif top.is_dir():
            entries.append(ReadOnly(top))
    entries.append(ReadOnly(etc_snapshot(), Path("/etc")))
    for root in (*_python_roots(), *extra):
        if root.exists():
            entries.append(ReadOnly(root))
    return entries
