"""Making a tree the agent wrote safe for the harness: one walk, before any host-side reader.

The agent controls every byte and every inode under its writable folders. Before the harness
copies, diffs, hashes or reads any of it, `neutralise` walks the tree once and

- removes setuid, setgid and sticky bits and write-for-everyone from every file and folder
  (the root included): a setuid copy of a shell left in a workspace must never be runnable
  as its owner by another local user, even when the sandbox uid is unprivileged;
- lists FIFOs, sockets and device nodes ("odd files") without ever opening one: reading a
  FIFO blocks forever, opening a device has side effects;
- follows no symlink and survives any shape: the walk works on directory file descriptors
  (no path is ever longer than one name, so a 4,000-byte path is fine), keeps at most two
  descriptors open and no recursion (a tree 10,000 folders deep is fine), and takes names as
  bytes (newlines, escape sequences and bytes that are not UTF-8 are fine).

    report = neutralise(run_dir / "workspace")      # a TreeReport: stripped bits, odd files
    for entry in walk_tree(root):                   # the same walk for a reader's own pass
        if entry.kind == "file":
            with entry.open() as fh: ...            # a regular file, never a FIFO or device

Call it after the sandboxed processes have ended (`harness.sandbox.launch.Launcher` does, for
every writable mount): the walk assumes nothing renames folders under it, and refuses to go
on (`TreeChanged`) if a folder's identity changes mid-walk.
"""

from __future__ import annotations

import contextlib
import functools
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Literal

from harness.artifacts.sandbox_sections import LISTED, OddFile, OddKind, TreeReport, printable

EntryKind = Literal["dir", "file", "symlink"] | OddKind

UNSAFE_BITS = stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX | stat.S_IWOTH
"""Mode bits no file or folder the agent wrote keeps once the harness takes the tree over."""

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_KINDS: tuple[tuple[int, EntryKind], ...] = (
    (stat.S_IFDIR, "dir"),
    (stat.S_IFREG, "file"),
    (stat.S_IFLNK, "symlink"),
    (stat.S_IFIFO, "fifo"),
    (stat.S_IFSOCK, "socket"),
    (stat.S_IFCHR, "char_device"),
    (stat.S_IFBLK, "block_device"),
)


class TreeChanged(RuntimeError):
    """A folder was replaced while the tree was walked (something still writes to it)."""


class NotARegularFile(OSError):
    """`TreeEntry.open` on something that is not a regular file (never opened)."""


def kind_of(mode: int) -> EntryKind:
    """The entry kind of an `st_mode` (from lstat: a symlink is "symlink")."""
    fmt = stat.S_IFMT(mode)
    return next((kind for bits, kind in _KINDS if bits == fmt), "unknown")


@dataclass(frozen=True)
class TreeEntry:
    """One entry of a walk. `dir_fd` is the open folder holding it, valid only until the walk
    moves on: use it (with `name`) for *at() calls, never close it."""

    rel: bytes
    """Path relative to the root, b"/"-separated, as raw bytes."""
    name: bytes
    st: os.stat_result
    """lstat of the entry (a symlink is reported, never followed)."""
    dir_fd: int
    depth: int
    """1 for an entry directly in the root."""

    @property
    def kind(self) -> EntryKind:
        """dir, file, symlink, or an odd kind (fifo, socket, char_device, block_device, unknown)."""
        return kind_of(self.st.st_mode)

    @property
    def shown(self) -> str:
        """The relative path, printable (see `harness.artifacts.sandbox_sections.printable`)."""
        return printable(self.rel)

    def open(self) -> BinaryIO:
        """The entry's content for reading, only if it is still the regular file that was walked.

        Opened without following a symlink and without opening anything else first (O_PATH, then
        checked, then reopened), so a FIFO or device swapped in is refused, never opened.
        """
        path_fd = os.open(self.name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=self.dir_fd)
        try:
            st = os.fstat(path_fd)
            if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) != (self.st.st_dev, self.st.st_ino):
                raise NotARegularFile(f"{self.shown} is not the regular file that was walked")
            fd = os.open(f"/proc/self/fd/{path_fd}", os.O_RDONLY | os.O_CLOEXEC)
        finally:
            os.close(path_fd)
        return os.fdopen(fd, "rb")


@dataclass
class _Frame:
    rel: bytes
    ident: tuple[int, int]
    pending: list[bytes] = field(default_factory=list)
    """Names still to visit, sorted descending (popped from the end: ascending order)."""


def _listing(fd: int) -> list[bytes]:
    with os.scandir(fd) as it:
        return sorted((os.fsencode(e.name) for e in it), reverse=True)


def _open_dir(name: bytes | str | Path, ident: tuple[int, int] | None, dir_fd: int | None = None) -> int:
    fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    st = os.fstat(fd)
    if ident is not None and (st.st_dev, st.st_ino) != ident:
        os.close(fd)
        raise TreeChanged(f"a folder changed while it was walked ({os.fsdecode(name)!r})")
    return fd


def _ascend(fd: int, parent: _Frame) -> int:
    """Back up by "..", checked against the identity seen on the way down; closes `fd`."""
    up = _open_dir("..", parent.ident, dir_fd=fd)
    os.close(fd)
    return up


def walk_tree(root: Path, *, skip: frozenset[bytes] = frozenset()) -> Iterator[TreeEntry]:
    """Every entry under `root`, depth first, names in byte order; symlinks never followed.

    A folder that cannot be opened (vanished, or its permissions refuse even the harness) is
    yielded and not entered; relative paths in `skip` are neither yielded nor entered. Raises
    `TreeChanged` when a folder is swapped mid-walk.
    """
    fd = _open_dir(root, None)
    st = os.fstat(fd)
    stack = [_Frame(b"", (st.st_dev, st.st_ino), _listing(fd))]
    try:
        while stack:
            frame = stack[-1]
            if not frame.pending:
                stack.pop()
                if stack:
                    fd = _ascend(fd, stack[-1])
                continue
            name = frame.pending.pop()
            rel = frame.rel + b"/" + name if frame.rel else name
            if rel in skip:
                continue
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                continue
            yield TreeEntry(rel, name, st, fd, len(stack))
            if not stat.S_ISDIR(st.st_mode):
                continue
            try:
                child = _open_dir(name, (st.st_dev, st.st_ino), dir_fd=fd)
            except (FileNotFoundError, PermissionError):
                continue
            try:
                listing = _listing(child)
            except OSError:
                os.close(child)
                continue
            os.close(fd)
            fd = child
            stack.append(_Frame(rel, (st.st_dev, st.st_ino), listing))
    finally:
        os.close(fd)


def _strip(mode: int, chmod: Callable[[int], None]) -> bool:
    if stat.S_ISLNK(mode) or not mode & UNSAFE_BITS:
        return False
    chmod(stat.S_IMODE(mode) & ~UNSAFE_BITS)
    return True


def _chmod_at(entry: TreeEntry, mode: int) -> None:
    # fchmodat follows a final symlink, but _strip never chmods one (lstat said what it is).
    os.chmod(entry.name, mode, dir_fd=entry.dir_fd)


def neutralise(root: Path) -> TreeReport:
    """Strip unsafe mode bits from everything under `root` (and `root` itself) and list odd files.

    Returns what was found; nothing is deleted or renamed (what to make of an odd file is the
    caller's decision). A missing root is an empty report.
    """
    if not root.is_dir() or root.is_symlink():
        return TreeReport()
    entries = stripped = odd_count = deepest = 0
    stripped_paths: list[str] = []
    odd: list[OddFile] = []
    if _strip(os.lstat(root).st_mode, lambda mode: os.chmod(root, mode)):
        stripped += 1
        stripped_paths.append(".")
    for entry in walk_tree(root):
        entries += 1
        deepest = max(deepest, entry.depth)
        kind = entry.kind
        if kind not in ("dir", "file", "symlink"):
            odd_count += 1
            if len(odd) < LISTED:
                odd.append(OddFile(path=entry.shown, kind=kind))
        with contextlib.suppress(FileNotFoundError):
            if _strip(entry.st.st_mode, functools.partial(_chmod_at, entry)):
                stripped += 1
                if len(stripped_paths) < LISTED:
                    stripped_paths.append(entry.shown)
    return TreeReport(
        entries=entries,
        stripped=stripped,
        stripped_paths=tuple(stripped_paths),
        odd_count=odd_count,
        odd=tuple(odd),
        deepest=deepest,
    )


def remove_tree(root: Path | bytes, *, dir_fd: int | None = None, ignore_errors: bool = False) -> None:
    """Delete `root` (relative to `dir_fd` when given) and everything below it, at any depth,
    never following a symlink. A missing root is nothing to do.

    `shutil.rmtree` recurses (a tree 2,000 folders deep raises RecursionError) and joins paths;
    this works on directory descriptors like `walk_tree`. A read-only folder (a read-only copy)
    is made writable to empty it.
    """
    if ignore_errors:
        with contextlib.suppress(OSError, TreeChanged):
            remove_tree(root, dir_fd=dir_fd)
        return
    try:
        st = os.stat(root, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(st.st_mode):
        os.unlink(root, dir_fd=dir_fd)
        return
    fd = _open_dir(root, (st.st_dev, st.st_ino), dir_fd=dir_fd)
    stack = [_Frame(b"", (st.st_dev, st.st_ino), _clear_files(fd))]
    try:
        while True:
            frame = stack[-1]
            if frame.pending:
                name = frame.pending.pop()
                child_st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                child = _open_dir(name, (child_st.st_dev, child_st.st_ino), dir_fd=fd)
                os.close(fd)
                fd = child
                stack.append(_Frame(name, (child_st.st_dev, child_st.st_ino), _clear_files(fd)))
                continue
            stack.pop()
            if not stack:
                break
            fd = _ascend(fd, stack[-1])
            _unlink(frame.rel, fd, folder=True)  # here `rel` holds the folder's own name
    finally:
        os.close(fd)
    os.rmdir(root, dir_fd=dir_fd)


def empty_tree(root: Path) -> None:
    """Delete everything below the folder `root` and keep the folder itself (the same inode: a
    sandbox that has it mounted keeps seeing it), never following a symlink."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        for name in _listing(fd):
            remove_tree(name, dir_fd=fd)
    finally:
        os.close(fd)


def _unlink(name: bytes, dir_fd: int, *, folder: bool = False) -> None:
    remove = os.rmdir if folder else os.unlink
    try:
        remove(name, dir_fd=dir_fd)
    except PermissionError:  # a read-only folder: made writable, once
        os.chmod(dir_fd, stat.S_IMODE(os.fstat(dir_fd).st_mode) | stat.S_IRWXU)
        remove(name, dir_fd=dir_fd)


def _clear_files(fd: int) -> list[bytes]:
    """Unlink every non-folder in the open folder; return its subfolders' names."""
    folders: list[bytes] = []
    for name in _listing(fd):
        if stat.S_ISDIR(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
            folders.append(name)
        else:
            _unlink(name, fd)
    return folders


def merged(earlier: TreeReport | None, later: TreeReport) -> TreeReport:
    """Two walks of the same tree (after two commands): counts of stripped bits add up, the
    latest walk says what the tree holds now."""
    if earlier is None:
        return later
    paths = (*earlier.stripped_paths, *(p for p in later.stripped_paths if p not in earlier.stripped_paths))
    return later.model_copy(
        update={
            "stripped": earlier.stripped + later.stripped,
            "stripped_paths": paths[:LISTED],
            "deepest": max(earlier.deepest, later.deepest),
        }
    )
