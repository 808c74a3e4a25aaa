"""A minimal subprocess call for check commands: timeout, process-group kill, capped output.

This stands in until the project's one process wrapper (`harness.proc`) lands; the
engine calls only `run_command`, so switching is a one-module change.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

OUTPUT_CAP = 4_000_000
"""Bytes of stdout (and of stderr) kept from one check command."""


class Completed(NamedTuple):
    """What a finished (or killed) command left."""

    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool


def run_command(argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], timeout_s: float) -> Completed:
    """Run argv in its own process group; on timeout kill the whole group."""
    proc = subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc.pid)
        out, err = proc.communicate()
    finally:
        # Children that outlive their parent (a daemonised server) die with the group.
        _kill_group(proc.pid)
    return Completed(
        exit_code=None if timed_out else proc.returncode,
        stdout=out[:OUTPUT_CAP].decode("utf-8", "replace"),
        stderr=err[:OUTPUT_CAP].decode("utf-8", "replace"),
        timed_out=timed_out,
    )


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
