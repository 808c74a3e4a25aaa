"""Reading and copying a tree the agent wrote, whatever its shape, without ever being fooled by it.

Built on `harness.sandbox.neutralise.walk_tree` (directory descriptors and relative names, so a
workspace holding a 4,000-byte path is read and copied like any other; names are bytes; symlinks
never followed): reading a regular file without opening a FIFO or device in its place, and
copying files or whole trees, with what was left out reported.

    for entry in walk_tree(root):                    # depth first, byte order
        if entry.kind == "file": data = read_at(entry.name, entry.dir_fd)  # never a FIFO
    skipped = copy_tree(src, dest)                    # [(printable path, why)] left out
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import NamedTuple

from harness.artifacts.sandbox_sections import printable
from harness.sandbox.neutralise import walk_tree

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
