"""Errors of the run-time half; the CLI's main() maps them to exit codes."""

from __future__ import annotations

import errno
from pathlib import Path


class AssayError(Exception):
    """A user-facing error: printed as a message, never a traceback."""

    exit_code = 1


class UsageError(AssayError):
    """Bad arguments or a bad reference to something that does not exist."""

    exit_code = 2


class NothingSelected(AssayError):
    """A filter selected no job."""

    exit_code = 3


class TreeBusy(AssayError):
    """Another runner holds the run tree (its lock names the holder)."""

    exit_code = 4


class TreeUnwritable(AssayError):
    """The run tree cannot be written (full disk, read-only, I/O error): the batch stopped; rerun resumes."""

    exit_code = 74  # EX_IOERR of sysexits.h


IO_ERRNOS = frozenset({errno.ENOSPC, errno.EROFS, errno.EIO, errno.EDQUOT, errno.EACCES, errno.EPERM})
"""OSErrors of the disk or its permissions, not of assay: the command stops in one line naming the path
(`io_detail`), exit 74, never a traceback."""


def io_detail(exc: OSError, where: Path | None = None) -> str:
    """`cannot write <path>: <reason>`, the one line a full or read-only disk gets."""
    path = exc.filename if exc.filename is not None else where or "the run tree"
    return f"cannot write {path}: {exc.strerror or exc}"
