"""Errors of the run-time half; the CLI's main() maps them to exit codes."""

from __future__ import annotations


class AssayError(Exception):
    """A user-facing error: printed as a message, never a traceback."""

    exit_code = 1


class UsageError(AssayError):
    """Bad arguments or a bad reference to something that does not exist."""

    exit_code = 2


class NothingSelected(AssayError):
    """A filter selected no job."""

    exit_code = 3
