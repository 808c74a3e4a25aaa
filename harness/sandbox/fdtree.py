"""Reading and copying a tree the agent wrote, whatever its shape, without ever being fooled by it.

Built on `harness.sandbox.neutralise.walk_tree` (directory descriptors and relative names, so a
workspace holding a 4,000-byte path is read and copied like any other; names are bytes; symlinks
never followed): reading a regular file without opening a FIFO or device in its place, and
copying files or whole trees, with what was left out reported.

    for entry in walk_tree(root):                    # depth first, byte order
        if entry.kind == "file": data = read_at(entry.name, entry.dir_fd)  # never a FIFO
    skipped = copy_tree(src, dest)                    # [(printable path, why)] left out
    skipped = mirror_tree(src, dest)                  # the same, FIFOs, sockets, holes, links kept
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path
from typing import NamedTuple

from harness.artifacts.sandbox_sections import printable
from harness.sandbox.neutralise import UNSAFE_BITS, TreeChanged, TreeEntry, walk_tree

MAX_REL = 4000
"""The longest relative path (bytes) copied or diffed: with `a/` in front it stays under PATH_MAX."""

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


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
            now = os.fstat(fin)
            if now.st_blocks * 512 < now.st_size:  # sparse: hole for hole (the grader's copy of a
                copy_data(fin, fout, now.st_size, [now.st_size])  # 1,000 MB hole is no write)
            else:
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
        for entry in walk_tree(src):
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


AGENT_CAUSED = (" not copied)", "(over the size limit when copied out)")
"""Suffixes of what `mirror_tree` leaves out because of what the agent left (not the host's doing)."""


def mirror_tree(
    src: Path, dest: Path, left: list[int] | None = None, failures: list[str] | None = None
) -> list[str]:
    """Copy the tree at src into the existing folder dest as it is; returns what was left out, with why.

    What `copy_tree` leaves out, this keeps (for a tree that must stay what the agent left: a
    trial's folders copied out of their size-limited filesystem, `harness.sandbox.disk`).

    Walked and written on directory descriptors (any depth, any name). Regular files keep their
    holes and hard links, everything keeps its owner, mode (setuid bits never) and times (folders
    but their times); FIFOs and sockets are made anew (never opened), devices never copied. At most
    `left[0]` bytes of file data are written (then files are left out): the host's disk never
    takes more than the filesystem held. What could not be written (an error of the host's side)
    is also added to `failures`.
    """
    left = [1 << 62] if left is None else left
    skipped: list[str] = []
    stack = [os.open(dest, _DIR)]
    links: dict[int, bytes] = {}
    """Inode in src -> its first copy's path, for the next hard link to it."""
    try:
        for entry in walk_tree(src):
            while len(stack) > entry.depth:
                fd = stack.pop()
                if fd >= 0:
                    os.close(fd)
            parent = stack[-1]
            if parent < 0:  # below a folder that could not be copied
                if entry.kind == "dir":
                    stack.append(-1)
                continue
            try:
                why = _copy_entry(entry, parent, stack, links, left)
            except OSError as exc:
                why = exc.strerror or str(exc)
                if exc.errno != errno.ENOSPC or left[0] > 0:  # ENOSPC with no budget left: the agent's
                    (failures if failures is not None else []).append(entry.shown)
                if entry.kind == "dir" and len(stack) == entry.depth:
                    stack.append(-1)
            if why:
                skipped.append(f"{entry.shown} ({why})")
    except TreeChanged:
        skipped.append("(the tree changed while it was copied)")
    finally:
        for fd in stack:
            if fd >= 0:
                os.close(fd)
    return skipped


def _copy_entry(
    entry: TreeEntry, parent: int, stack: list[int], links: dict[int, bytes], left: list[int]
) -> str | None:
    st, name, kind = entry.st, entry.name, entry.kind
    mode = stat.S_IMODE(st.st_mode) & ~(stat.S_ISUID | stat.S_ISGID)
    if kind == "dir":
        os.mkdir(name, 0o700, dir_fd=parent)
        fd = os.open(name, _DIR, dir_fd=parent)
        stack.append(fd)
        os.fchown(fd, st.st_uid, st.st_gid)
        os.fchmod(fd, mode & ~UNSAFE_BITS | (st.st_mode & stat.S_ISVTX))
        return None
    if kind == "file":
        if st.st_nlink > 1 and st.st_ino in links:
            with contextlib.suppress(OSError):
                os.link(links[st.st_ino], name, src_dir_fd=stack[0], dst_dir_fd=parent)
                return None
        if st.st_blocks * 512 > left[0]:
            return "over the size limit when copied out"
        _copy_file(entry, parent, mode, left)
        if st.st_nlink > 1:
            links[st.st_ino] = entry.rel
        return None
    if kind == "symlink":
        os.symlink(os.readlink(name, dir_fd=entry.dir_fd), name, dir_fd=parent)
    elif kind == "fifo":
        os.mkfifo(name, mode, dir_fd=parent)
    elif kind == "socket":
        os.mknod(name, stat.S_IFSOCK | mode, dir_fd=parent)
    else:
        return f"{kind} not copied"
    os.chown(name, st.st_uid, st.st_gid, dir_fd=parent, follow_symlinks=False)
    os.utime(name, ns=(st.st_atime_ns, st.st_mtime_ns), dir_fd=parent, follow_symlinks=False)
    return None


def _copy_file(entry: TreeEntry, parent: int, mode: int, left: list[int]) -> None:
    st = entry.st
    src = os.open(entry.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=entry.dir_fd)
    try:
        now = os.fstat(src)
        if not stat.S_ISREG(now.st_mode) or now.st_ino != st.st_ino:
            raise OSError(errno.ESTALE, "replaced while it was copied")
        out = os.open(
            entry.name,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            0o600,
            dir_fd=parent,
        )
        try:
            copy_data(src, out, now.st_size, left, dense=now.st_blocks * 512 >= now.st_size)
            if (st.st_uid, st.st_gid) != (0, 0):
                os.fchown(out, st.st_uid, st.st_gid)
            os.fchmod(out, mode)
            os.utime(out, ns=(st.st_atime_ns, st.st_mtime_ns))
        finally:
            os.close(out)
    finally:
        os.close(src)


def copy_data(src: int, out: int, size: int, left: list[int], *, dense: bool = False) -> None:
    """Copy the data of src into out, hole for hole (a sparse file stays sparse), taking what is
    written off `left[0]`; ENOSPC when that runs out. `dense`: src has no holes (one pass)."""
    if dense and size <= left[0]:
        done = 0
        while done < size and (sent := os.sendfile(out, src, done, size - done)):
            done += sent
        left[0] -= done
        if done == size:
            return
    pos = 0
    while pos < size:
        try:
            start = os.lseek(src, pos, os.SEEK_DATA)
        except OSError as exc:
            if exc.errno != errno.ENXIO:  # ENXIO: only a hole is left
                raise
            break
        end = os.lseek(src, start, os.SEEK_HOLE)
        os.lseek(out, start, os.SEEK_SET)
        while start < end:
            if left[0] <= 0:
                raise OSError(errno.ENOSPC, "over the size limit when copied out")
            sent = os.sendfile(out, src, start, min(end - start, left[0], 1 << 30))
            if sent == 0:
                break
            start += sent
            left[0] -= sent
        pos = end
    os.ftruncate(out, size)
