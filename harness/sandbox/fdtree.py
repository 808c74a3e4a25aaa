"""Reading and copying a tree the agent wrote, whatever its shape, without ever being fooled by it.

Every operation works on directory file descriptors and relative names: no path the kernel is
handed is longer than a relative path inside the tree, so a workspace holding a 4,000-byte path
(which is longer than PATH_MAX once the run directory is put in front) is read and copied like
any other. Names are bytes (newlines, escape sequences, bytes that are not UTF-8). Symlinks are
never followed; FIFOs, sockets and devices are never opened, only reported.

    for entry in walk(root):                         # depth first, byte order
        if entry.kind == "file": data = read_at(entry.name, entry.dir_fd)  # never a FIFO
    skipped = copy_tree(src, dest)                    # [(printable path, why)] left out
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

MAX_REL = 4000
"""The longest relative path (bytes) copied or diffed: with `a/` in front it stays under PATH_MAX."""

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_ODD = {
    stat.S_IFIFO: "fifo",
    stat.S_IFSOCK: "socket",
    stat.S_IFCHR: "char_device",
    stat.S_IFBLK: "block_device",
}


class TreeChanged(RuntimeError):
    """A folder was replaced while the tree was walked."""


def kind_of(mode: int) -> str:
    """dir, file, symlink, or an odd kind: fifo, socket, char_device, block_device."""
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISLNK(mode):
        return "symlink"
    return _ODD.get(stat.S_IFMT(mode), "unknown")


def printable(rel: bytes) -> str:
    """A relative path for messages and records: control bytes and non-UTF-8 bytes escaped."""
    text = rel.decode("utf-8", errors="backslashreplace")
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


@dataclass(frozen=True)
class Entry:
    """One entry of a walk; `dir_fd` (the open folder holding it) is valid only until the walk moves on."""

    rel: bytes
    name: bytes
    st: os.stat_result
    dir_fd: int

    @property
    def kind(self) -> str:
        return kind_of(self.st.st_mode)


@dataclass
class _Frame:
    rel: bytes
    ident: tuple[int, int]
    pending: list[bytes] = field(default_factory=list)


def _listing(fd: int) -> list[bytes]:
    with os.scandir(fd) as it:
        return sorted((os.fsencode(e.name) for e in it), reverse=True)


def _open_dir(name: bytes | str | Path, ident: tuple[int, int] | None, dir_fd: int | None = None) -> int:
    fd = os.open(name, _DIR, dir_fd=dir_fd)
    st = os.fstat(fd)
    if ident is not None and (st.st_dev, st.st_ino) != ident:
        os.close(fd)
        raise TreeChanged(f"a folder changed while it was walked ({os.fsdecode(name)!r})")
    return fd


def walk(root: Path, *, skip: frozenset[bytes] = frozenset()) -> Iterator[Entry]:
    """Every entry under `root`, depth first, names in byte order, symlinks never followed.

    Two descriptors at most: going back up is `..`, checked against the folder seen on the way
    down, so depth costs nothing. A folder that cannot be opened is yielded and not entered;
    relative paths in `skip` are neither yielded nor entered.
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
                    parent = _open_dir("..", stack[-1].ident, dir_fd=fd)
                    os.close(fd)
                    fd = parent
                continue
            name = frame.pending.pop()
            rel = frame.rel + b"/" + name if frame.rel else name
            if rel in skip:
                continue
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                continue
            yield Entry(rel, name, st, fd)
            if not stat.S_ISDIR(st.st_mode):
                continue
            try:
                child = _open_dir(name, (st.st_dev, st.st_ino), dir_fd=fd)
                listing = _listing(child)
            except OSError:
                continue
            os.close(fd)
            fd = child
            stack.append(_Frame(rel, (st.st_dev, st.st_ino), listing))
    finally:
        os.close(fd)


def _unlink(name: bytes, dir_fd: int, *, folder: bool = False) -> None:
    remove = os.rmdir if folder else os.unlink
    try:
        remove(name, dir_fd=dir_fd)
    except PermissionError:  # a read-only folder (a read-only copy): make it writable, once
        os.chmod(dir_fd, stat.S_IMODE(os.fstat(dir_fd).st_mode) | stat.S_IRWXU)
        remove(name, dir_fd=dir_fd)


def _clear(fd: int) -> list[bytes]:
    """Unlink every non-folder in the folder `fd`; return its sub-folders' names."""
    folders = []
    for name in _listing(fd):
        if stat.S_ISDIR(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
            folders.append(name)
        else:
            _unlink(name, fd)
    return folders


def remove_tree(root: Path | bytes, *, dir_fd: int | None = None, ignore_errors: bool = False) -> None:
    """Delete `root` and everything under it, any depth (no recursion), symlinks never followed.

    `shutil.rmtree` recurses once per level: a tree a few thousand folders deep, which an agent
    makes in a second, raises RecursionError there. A missing root is nothing to do.
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
    st = os.fstat(fd)
    stack = [_Frame(b"", (st.st_dev, st.st_ino), _clear(fd))]
    try:
        while stack:
            frame = stack[-1]
            if frame.pending:
                name = frame.pending.pop()
                sub = os.stat(name, dir_fd=fd, follow_symlinks=False)
                inner = _open_dir(name, (sub.st_dev, sub.st_ino), dir_fd=fd)
                os.close(fd)
                fd = inner
                stack.append(_Frame(name, (sub.st_dev, sub.st_ino), _clear(fd)))
                continue
            stack.pop()
            if stack:
                parent = _open_dir("..", stack[-1].ident, dir_fd=fd)
                os.close(fd)
                fd = parent
                _unlink(frame.rel, fd, folder=True)
    finally:
        os.close(fd)
    os.rmdir(root, dir_fd=dir_fd)


def open_regular(name: bytes | str, dir_fd: int) -> int:
    """A read descriptor for a regular file (never a FIFO, device or symlink: OSError instead)."""
    fd = os.open(name, _FILE, dir_fd=dir_fd)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise IsADirectoryError(f"{os.fsdecode(name)!r} is not a regular file")
    os.set_blocking(fd, True)
    return fd


def read_at(name: bytes | str, dir_fd: int) -> bytes:
    """A regular file's whole content (OSError for anything else)."""
    fd = open_regular(name, dir_fd)
    try:
        size = os.fstat(fd).st_size
        chunks = [os.read(fd, max(size, 1 << 16))]
        while chunks[-1]:
            chunks.append(os.read(fd, 1 << 20))
        return b"".join(chunks)
    finally:
        os.close(fd)


def _copy_fd(src: int, dst: int) -> None:
    while True:
        try:
            sent = os.sendfile(dst, src, None, 1 << 24)
        except OSError:  # a file system without sendfile between these two
            data = os.read(src, 1 << 20)
            if not data:
                return
            os.write(dst, data)
            continue
        if not sent:
            return


def mkdirs(root_fd: int, rel: bytes, made: set[bytes] | None = None) -> None:
    """Create the folders of `rel` (relative to `root_fd`), parents first; existing ones kept.

    `made` remembers folders already there, across calls: one mkdir per new folder, however
    deep (a walk creates each folder right after its parent).
    """
    missing = []
    while rel and (made is None or rel not in made):
        missing.append(rel)
        rel = rel.rpartition(b"/")[0]
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder, 0o755, dir_fd=root_fd)
        if made is not None:
            made.add(folder)


def put(
    src_fd: int, src: bytes, dst_fd: int, rel: bytes, *, link: bool = True, made: set[bytes] | None = None
) -> None:
    """Copy the file or symlink `src` (relative to `src_fd`) to `rel` under `dst_fd`.

    A regular file is hard-linked when `link` and the kernel allows it, else copied; a symlink is
    recreated from its text, never followed. Parents of `rel` are created. Anything else: OSError.
    """
    parent = rel.rpartition(b"/")[0]
    if parent:
        mkdirs(dst_fd, parent, made)
    st = os.stat(src, dir_fd=src_fd, follow_symlinks=False)
    if stat.S_ISLNK(st.st_mode):
        os.symlink(os.readlink(src, dir_fd=src_fd), rel, dir_fd=dst_fd)
        return
    if link:
        try:
            os.link(src, rel, src_dir_fd=src_fd, dst_dir_fd=dst_fd, follow_symlinks=False)
            return
        except OSError:
            pass  # another file system, or hard links to files of another uid refused
    fin = open_regular(src, src_fd)
    try:
        fout = os.open(rel, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=dst_fd)
        try:
            _copy_fd(fin, fout)
            os.fchmod(fout, stat.S_IMODE(st.st_mode) & 0o777)
        finally:
            os.close(fout)
    finally:
        os.close(fin)


class Skipped(NamedTuple):
    """An entry a copy left out."""

    path: str
    """Printable relative path."""
    why: str


def copy_tree(src: Path, dest: Path, *, limit: int = MAX_REL) -> list[Skipped]:
    """Copy src into dest: folders, regular files (copied), symlinks (recreated, never followed).

    Left out and returned: FIFOs, sockets and devices (never opened), paths longer than `limit`
    bytes, and entries that vanish or cannot be read. dest is created; existing files in it are
    replaced, existing folders kept.
    """
    skipped: list[Skipped] = []
    made: set[bytes] = set()
    dest.mkdir(parents=True, exist_ok=True)
    dst_fd = os.open(dest, _DIR)
    pruned: bytes | None = None  # a folder left out: nothing below it is listed again
    try:
        for entry in walk(src):
            kind = entry.kind
            if pruned is not None and entry.rel.startswith(pruned):
                continue
            if len(entry.rel) > limit:
                skipped.append(Skipped(printable(entry.rel), f"path longer than {limit} bytes"))
                pruned = entry.rel + b"/"
                continue
            if kind not in ("dir", "file", "symlink"):
                skipped.append(Skipped(printable(entry.rel), kind))
                continue
            try:
                if kind == "dir":
                    mkdirs(dst_fd, entry.rel, made)
                    continue
                with contextlib.suppress(FileNotFoundError, IsADirectoryError):
                    os.unlink(entry.rel, dir_fd=dst_fd)
                put(entry.dir_fd, entry.name, dst_fd, entry.rel, link=False, made=made)
            except OSError as exc:
                skipped.append(Skipped(printable(entry.rel), exc.strerror or str(exc)))
    finally:
        os.close(dst_fd)
    return skipped
