"""Path safety: nothing the agent wrote can make the harness read or write outside a root.

The agent controls its workspace, symlinks included. Whatever the harness later does
with a workspace-relative path — writing a provision or evidence file into it, copying
it into a snapshot or the preserved workspace, reading an entry file for a check — goes
through these functions, so a symlink to `/etc/shadow` or to the scenario's reference,
or a name like `../../run.json`, cannot leak a target or overwrite one.

    dest = resolve_inside(workspace, "src/app.py")          # PathEscape if it leaves workspace
    data = read_inside(workspace, "answer.json")            # never follows a symlink
    copy_tree(workspace, run_dir / "workspace")              # symlinks copied as links, never followed
"""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import functools
import os
import re
import shutil
import stat
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path, PurePosixPath

from harness.artifacts.names import RESERVED, TRACE_FILE
from harness.artifacts.sandbox_sections import printable
from harness.sandbox.fdtree import copy_data
from harness.sandbox.neutralise import remove_tree, walk_tree


class PathEscape(ValueError):
    """A path that leaves its root, or goes through a symlink where none may be followed."""


def clean_relative(rel: str | PurePosixPath) -> PurePosixPath:
    """A relative, normalised path; refuses absolute paths, `..`, empty names and NULs."""
    text = str(rel)
    if not text or "\x00" in text:
        raise PathEscape(f"invalid path {text!r}")
    path = PurePosixPath(text)
    if path.is_absolute():
        raise PathEscape(f"{text!r} is absolute; a workspace-relative path is required")
    parts = [p for p in path.parts if p != "."]
    if ".." in parts:
        raise PathEscape(f"{text!r} climbs out with '..'")
    if not parts:
        raise PathEscape(f"{text!r} names the root itself")
    return PurePosixPath(*parts)


def is_inside(root: Path, path: Path) -> bool:
    """True when `path`, fully resolved (symlinks followed), lies within resolved `root`."""
    real_root = root.resolve()
    real = path.resolve()
    return real == real_root or real_root in real.parents


def resolve_inside(root: Path, rel: str | PurePosixPath, *, allow_final_symlink: bool = False) -> Path:
    """`root / rel` for reading or writing, refusing any route out of `root`.

    Every existing component is checked: a directory symlink on the way must stay inside
    `root`; the final component may not be a symlink at all unless `allow_final_symlink`
    (a write would follow it, a read would leak its target).
    """
    clean = clean_relative(rel)
    path = root / clean
    current = root
    for index, part in enumerate(clean.parts):
        current = current / part
        if not current.is_symlink():
            continue
        last = index == len(clean.parts) - 1
        if last and not allow_final_symlink:
            raise PathEscape(f"{clean} is a symlink (to {os.readlink(current)!r}); refusing to follow it")
        if not is_inside(root, current):
            raise PathEscape(f"{clean}: {current.relative_to(root)} is a symlink out of {root}")
    return path


def _open_nofollow(root: Path, rel: PurePosixPath) -> int:
    """An fd for reading the regular file root/rel, opened component by component with
    O_NOFOLLOW (no race with a swap). The last component is first opened O_PATH (which opens
    nothing) and reopened for reading only when it is a regular file: a FIFO would block the
    reader forever, a device could act on the open."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in rel.parts[:-1]:
            child = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = child
        path_fd = os.open(rel.parts[-1], os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):  # a symlink where a file or folder was expected
            raise PathEscape(f"{rel}: a symlink on the way; refusing to follow it") from exc
        raise
    finally:
        os.close(fd)
    try:
        mode = os.fstat(path_fd).st_mode
        if stat.S_ISLNK(mode):
            raise PathEscape(f"{rel}: a symlink; refusing to follow it")
        if not stat.S_ISREG(mode):
            raise PathEscape(f"{rel} is not a regular file")
        return os.open(f"/proc/self/fd/{path_fd}", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        os.close(path_fd)


def read_inside(root: Path, rel: str | PurePosixPath, *, max_bytes: int | None = None) -> bytes:
    """The bytes of a regular file under root, following no symlink at all (a FIFO, socket or
    device is refused without being opened)."""
    clean = clean_relative(rel)
    with os.fdopen(_open_nofollow(root, clean), "rb") as fh:
        return fh.read() if max_bytes is None else fh.read(max_bytes)


def open_inside(root: Path, rel: str | PurePosixPath) -> int:
    """A read-only fd of root/rel, opened following no symlink at all (the caller closes it)."""
    return _open_nofollow(root, clean_relative(rel))


def write_inside(root: Path, rel: str | PurePosixPath, data: bytes) -> Path:
    """Write a file under root (parents created), refusing symlinks on the way or in place."""
    path = resolve_inside(root, rel)
    path.parent.mkdir(parents=True, exist_ok=True)
    resolve_inside(root, rel)  # again: mkdir may have met a symlink planted meanwhile
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
    fd = os.open(path, flags, 0o644)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    return path


def clear_way(root: Path, rel: str | PurePosixPath) -> Path:
    """Make room for a fresh file at rel under root, whatever the agent left in its way.

    Links and files where a folder of the path goes become folders; a file, link or folder at
    rel itself is removed. Nothing is ever written through a link. Returns the target path.
    """
    rel = PurePosixPath(rel)
    current = root
    for part in rel.parts[:-1]:
        current = current / part
        if current.is_symlink() or (current.exists() and not current.is_dir()):
            current.unlink()  # never write through a link the agent left
        current.mkdir(exist_ok=True)
    target = root / rel
    if target.is_symlink() or target.is_file():
        target.unlink()
    elif target.is_dir():
        remove_tree(target)  # any depth: shutil.rmtree recurses
    return target


def walk(root: Path) -> Iterator[tuple[PurePosixPath, os.stat_result]]:
    """Every entry under root, depth first in name order (lstat: symlinks reported, never followed).

    Paths are joined under root, so an entry whose full path passes PATH_MAX raises; a tree the
    agent wrote goes through `harness.sandbox.neutralise.walk_tree` (directory descriptors) first.
    """
    stack = [(PurePosixPath(), iter(_listing(root)))]
    while stack:
        rel, entries = stack[-1]
        entry = next(entries, None)
        if entry is None:
            stack.pop()
            continue
        child = rel / entry.name
        st = entry.stat(follow_symlinks=False)
        yield child, st
        if stat.S_ISDIR(st.st_mode):
            stack.append((child, iter(_listing(root / child))))


def _listing(folder: Path) -> list[os.DirEntry[str]]:
    with os.scandir(folder) as it:
        return sorted(it, key=lambda e: e.name)


def copy_tree(src: Path, dest: Path, *, skip: Iterable[str] = ()) -> list[str]:
    """Copy src into dest: regular files and folders; symlinks recreated as links (their
    targets never read); devices, FIFOs and sockets skipped. Returns what was skipped.

    `skip` are glob patterns of relative paths left out (e.g. `.git`).
    """
    skipped: list[str] = []
    patterns = tuple(skip)
    dest.mkdir(parents=True, exist_ok=True)
    for rel, st in walk(src):
        name = rel.as_posix()
        if patterns and any(
            fnmatch.fnmatchcase(name, p) or fnmatch.fnmatchcase(rel.parts[0], p) for p in patterns
        ):
            continue
        target = dest / rel
        if stat.S_ISDIR(st.st_mode):
            target.mkdir(exist_ok=True)
        elif stat.S_ISLNK(st.st_mode):
            target.unlink(missing_ok=True)
            os.symlink(os.readlink(src / rel), target)
        elif stat.S_ISREG(st.st_mode):
            fd = _open_nofollow(src, rel)
            with os.fdopen(fd, "rb") as fin, open(target, "wb") as fout:
                shutil.copyfileobj(fin, fout, 1024 * 1024)
            os.chmod(target, stat.S_IMODE(st.st_mode) & 0o777)
        else:
            skipped.append(name)
    return skipped


@functools.lru_cache(maxsize=1024)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """A workspace-relative glob as a regex: `*` and `?` stay in one folder, `**` crosses
    folders, a trailing `dir/` means everything below. The one glob dialect of assay
    (`writable`, `unchanged`, file checks)."""
    if pattern.endswith("/"):
        pattern += "**"
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z", re.DOTALL)  # a name may hold a newline


def matches(rel: str | PurePosixPath, globs: Iterable[str]) -> bool:
    """True when the workspace-relative path matches one of the globs (`**` spans folders)."""
    text = clean_relative(rel).as_posix()
    return any(glob_regex(g).match(text) for g in globs)


MAX_OUTBOX_DEPTH = 32
"""Folders deeper than this in the outbox are not moved into the run directory (refused)."""


def collect(
    outbox: Path, dest: Path, *, append: Iterable[str] = (TRACE_FILE,), budget: int | None = None
) -> list[str]:
    """Move what a sandboxed process wrote into its outbox over to `dest` (the run directory).

    The sandbox sees the outbox at the run directory's path, so adapters and shims write
    `usage.jsonl` & co. where their environment says, while the real run directory (records,
    snapshots, job file) stays invisible. Moved: regular files, and folders that do not
    exist in `dest` yet. Refused, and returned (printable): symlinks, FIFOs, sockets, devices,
    reserved names (`RESERVED`), anything that would land on an existing folder of `dest`,
    anything deeper than `MAX_OUTBOX_DEPTH`, files past a `budget` of bytes (the outbox limit:
    what fits is moved, in name order), and whatever could not be moved. Files named in
    `append` are appended to (the tracing shim writes across commands). Empty folders of
    mount points that the sandbox created are dropped silently. Never raises for what the
    agent left: the outbox is emptied either way. Moved files belong to the harness's uid.
    """
    refused: list[str] = []
    appended = frozenset(append)
    left = [sys.maxsize if budget is None else budget]
    for entry in sorted(os.listdir(outbox)):
        src, target = outbox / entry, dest / entry
        shown = printable(os.fsencode(entry))
        try:
            refused += _collect_one(outbox, entry, target, shown, appended, left)
        except OSError as exc:
            refused.append(f"{shown} ({exc.strerror or exc})")
        finally:
            with contextlib.suppress(OSError):
                remove_tree(src)
    return refused


def _collect_one(
    outbox: Path, entry: str, target: Path, shown: str, appended: frozenset[str], left: list[int]
) -> list[str]:
    src = outbox / entry
    st = os.lstat(src)
    if stat.S_ISREG(st.st_mode) and not _spend(left, st):
        return [f"{shown} (over the outbox limit)"]
    if stat.S_ISDIR(st.st_mode) and target.is_dir() and not target.is_symlink():
        # written under a mount point's shadow: refused if anything but folders is there
        return [shown + "/"] if any(e.kind != "dir" for e in walk_tree(src)) else []
    if (
        entry in RESERVED
        or not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode))
        or target.is_symlink()
        or (target.exists() and not target.is_file())
    ):
        return [shown]
    if stat.S_ISDIR(st.st_mode):
        return _move_folder(src, target, shown, left)
    if entry in appended and target.is_file():
        with open(target, "ab") as fout:
            fout.write(read_inside(outbox, entry))
        return []
    _move(entry, target, outbox)
    _own(target)
    return []


def _move(name: str | bytes, target: Path, folder: Path | int) -> None:
    """Rename `name` (in `folder`, a path or a descriptor) to target, or copy it there and remove
    it when the outbox is a filesystem of its own (`harness.sandbox.disk`: EXDEV)."""
    fd = folder if isinstance(folder, int) else os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        try:
            os.rename(name, target, src_dir_fd=fd)
            return
        except OSError as exc:
            if exc.errno != errno.EXDEV:
                raise
        src = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=fd)
        try:
            st = os.fstat(src)
            if not stat.S_ISREG(st.st_mode):
                raise OSError(errno.EINVAL, "not a regular file")
            out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
            try:
                copy_data(src, out, st.st_size, [st.st_blocks * 512])
            finally:
                os.close(out)
        finally:
            os.close(src)
        os.unlink(name, dir_fd=fd)
    finally:
        if not isinstance(folder, int):
            os.close(fd)


def _move_folder(src: Path, target: Path, shown: str, left: list[int]) -> list[str]:
    refused: list[str] = []
    target.mkdir()
    _own(target)
    for item in walk_tree(src):
        where = f"{shown}/{item.shown}"
        if item.depth > MAX_OUTBOX_DEPTH:
            if item.depth == MAX_OUTBOX_DEPTH + 1:
                refused.append(f"{where} (deeper than {MAX_OUTBOX_DEPTH} folders)")
            continue
        dest = target / os.fsdecode(item.rel)
        if item.kind == "dir":
            dest.mkdir()
        elif item.kind == "file" and not _spend(left, item.st):
            refused.append(f"{where} (over the outbox limit)")
            continue
        elif item.kind == "file":  # no symlink may enter the run directory: the harness writes there as root
            _move(item.name, dest, item.dir_fd)
        else:
            refused.append(where)
            continue
        _own(dest)
    return refused


def _spend(left: list[int], st: os.stat_result) -> bool:
    """Take a file's size off the budget; False (nothing taken) when it does not fit."""
    size = max(st.st_size, st.st_blocks * 512)
    if size > left[0]:
        return False
    left[0] -= size
    return True


def _own(path: Path) -> None:
    """Nothing in the run directory stays the sandbox uid's (a moved file keeps its owner)."""
    st = os.lstat(path)
    if (st.st_uid, st.st_gid) != (os.geteuid(), os.getegid()):
        os.chown(path, os.geteuid(), os.getegid(), follow_symlinks=False)
