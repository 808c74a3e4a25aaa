"""What `run`, `matrix` and `grade` ask of a project's generated/ before they start, and how a disk
that cannot be written ends them: each in one line, never a traceback."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from harness.errors import IO_ERRNOS, TreeUnwritable, UsageError, io_detail


def refuse_stale(project: Path | None) -> None:
    """Refuse a generated/ that is damaged or older than the specs it was compiled from: trials
    would run, and grades be made, by checks the project no longer has.

    Raises:
        UsageError: naming the file that cannot be read, or the inputs that changed.
    """
    from harness.grade.project import DamagedCompile, stale_inputs

    try:
        stale = stale_inputs(project)
    except DamagedCompile as exc:
        raise UsageError(damaged(exc)) from None
    if stale:
        shown = ", ".join(stale[:3]) + (f" (+{len(stale) - 3} more)" if len(stale) > 3 else "")
        raise UsageError(f"generated/ is older than the specs ({shown} changed): run `assay compile` first")


def damaged(exc: Exception) -> str:
    """The one line for a file of generated/ that cannot be read."""
    return f"{exc}; `assay compile` rewrites generated/"


@contextlib.contextmanager
def unwritable(where: Path, then: str) -> Iterator[None]:
    """A full, read-only or failing disk met inside: `cannot write <path>: <reason>; <then>` and
    exit 74 (`TreeUnwritable`), as `assay matrix` ends on one."""
    try:
        yield
    except OSError as exc:
        if exc.errno not in IO_ERRNOS:
            raise
        raise TreeUnwritable(f"{io_detail(exc, where)}; {then}") from None
