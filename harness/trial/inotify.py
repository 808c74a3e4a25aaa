"""Linux inotify through libc, for the snapshot watcher: which files were written, and when a write ended.

Only what the watcher needs: an instance, watches on folders and files, and the events read
without blocking. `Inotify.open()` returns None where the kernel or the C library has no
inotify (or the per-user instance limit is reached): the caller then polls instead.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import functools
import os
import struct
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

MODIFY = 0x2
ATTRIB = 0x4
CLOSE_WRITE = 0x8
MOVED_FROM = 0x40
MOVED_TO = 0x80
CREATE = 0x100
DELETE = 0x200
DELETE_SELF = 0x400
MOVE_SELF = 0x800
Q_OVERFLOW = 0x4000
IGNORED = 0x8000
ISDIR = 0x40000000
_DONT_FOLLOW = 0x2000000
_NONBLOCK = os.O_NONBLOCK
_CLOEXEC = 0o2000000

FOLDER_EVENTS = MODIFY | CLOSE_WRITE | MOVED_FROM | MOVED_TO | CREATE | DELETE | DELETE_SELF | MOVE_SELF
"""A folder on the way to a watched file: its entries written, created, removed or renamed."""
FILE_EVENTS = MODIFY | CLOSE_WRITE | ATTRIB
"""A watched file itself, whatever name (a hard link) it was written through."""

_HEADER = struct.Struct("iIII")


class Event(NamedTuple):
    """One inotify event: the watch it came from, what happened, and the entry's name (folders)."""

    wd: int
    mask: int
    name: str


@functools.cache
def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    try:
        lib = ctypes.CDLL(name, use_errno=True)
        lib.inotify_init1.argtypes = [ctypes.c_int]
        lib.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
    except (OSError, AttributeError):
        return None
    return lib


class Inotify:
    """One inotify instance; close it when done (it is a file descriptor)."""

    def __init__(self, fd: int, lib: ctypes.CDLL) -> None:
        self.fd = fd
        self._lib = lib

    @classmethod
    def open(cls) -> Inotify | None:
        """A new instance, or None where inotify cannot be had here."""
        lib = _libc()
        if lib is None:
            return None
        fd = lib.inotify_init1(_NONBLOCK | _CLOEXEC)
        return None if fd < 0 else cls(fd, lib)

    def watch(self, path: Path, mask: int) -> int | None:
        """Watch path (never through a symlink); its watch descriptor, or None when it is gone."""
        wd = self._lib.inotify_add_watch(self.fd, os.fsencode(path), mask | _DONT_FOLLOW)
        if wd < 0:
            err = ctypes.get_errno()
            if err in (errno.ENOENT, errno.ENOTDIR, errno.EACCES, errno.ENOSPC):
                return None  # gone, or the watch limit: the final look still sees the end state
            raise OSError(err, os.strerror(err), str(path))
        return int(wd)

    def read(self) -> Iterator[Event]:
        """Every event queued now (never blocks)."""
        while True:
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                return
            offset = 0
            while offset < len(data):
                wd, mask, _cookie, size = _HEADER.unpack_from(data, offset)
                raw = data[offset + _HEADER.size : offset + _HEADER.size + size]
                offset += _HEADER.size + size
                yield Event(wd, mask, os.fsdecode(raw.rstrip(b"\0")))

    def close(self) -> None:
        """Close the instance, without waiting: the kernel retires its watches first, waiting out
        a grace period (about 9 ms of every trial here), and nothing that follows needs that done."""
        threading.Thread(target=os.close, args=(self.fd,), daemon=True, name="inotify-close").start()
