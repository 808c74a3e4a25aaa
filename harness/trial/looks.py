"""One look at a watched file (`harness.trial.snapshots`): its bytes, read under a read lease.

A read lease (`F_SETLEASE`) is granted only while no process has the file open for writing, and
holds a writer's open back until the read is done: what is read under one is a file nobody is
writing (`Look.proven`). Where leases do not work (another filesystem, another owner without
CAP_LEASE) the read is plain, and the watcher settles the version another way.
"""

from __future__ import annotations

import errno
import fcntl
import os
import signal
import stat
from pathlib import Path
from typing import NamedTuple

from harness.artifacts.readers import SNAPSHOT_MAX
from harness.sandbox.pathsafe import PathEscape, open_inside


class Look(NamedTuple):
    """What one look at a file found."""

    data: bytes | None
    """The file's bytes; None when it is gone (or not a regular file)."""
    proven: bool = False
    """True when a read lease proved that nobody was writing it."""
    busy: bool = False
    """True when a process holds the file open for writing (nothing was read)."""
    changed: float | None = None
    """The inode change time (ctime) of the version read (not of whatever the file holds later)."""
    large: str | None = None
    """A version over `SNAPSHOT_MAX`, not read: its size, change time and inode (data is None)."""

    @property
    def there(self) -> bool:
        """The file exists (read, or too large to read)."""
        return self.data is not None or self.large is not None


BUSY = Look(None, busy=True)
"""A file found open for writing: nothing was read."""


def read(workspace: Path, name: str, *, lease: bool = True) -> Look:
    """The file as it is now, under a read lease (`lease`) where there can be one."""
    try:  # never through a symlink: one to the reference would copy it into the run's artifacts
        fd = open_inside(workspace, name)
    except (OSError, PathEscape):
        return Look(None)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return Look(None)
        leased = False
        try:
            if lease:
                # A broken lease signals its holder with SIGIO, which would end the harness; SIGURG is ignored.
                fcntl.fcntl(fd, fcntl.F_SETSIG, signal.SIGURG)
                fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_RDLCK)
                leased = True
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.EBUSY):
                return BUSY
            # no leases here (filesystem, owner): the caller settles another way
        try:
            st, data = os.fstat(fd), b""
            if st.st_size <= SNAPSHOT_MAX:  # a larger one is never read: its identity tells versions apart
                with os.fdopen(fd, "rb", closefd=False) as fh:
                    data = fh.read(SNAPSHOT_MAX + 1)  # no further, should it grow as it is read
            if max(st.st_size, len(data)) > SNAPSHOT_MAX:
                large = f"{max(st.st_size, len(data))}:{st.st_ctime_ns}:{st.st_ino}"
                return Look(None, proven=leased, changed=st.st_ctime, large=large)
            # the version read, stated through its descriptor: a path may hold a later one by now
            return Look(data, proven=leased, changed=os.fstat(fd).st_ctime)
        finally:
            if leased:
                fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_UNLCK)
    except OSError:
        return Look(None)
    finally:
        os.close(fd)
