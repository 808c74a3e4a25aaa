"""Check commands through the project's one process wrapper (`harness.sandbox.proc`).

`harness.sandbox.proc.run` owns timeouts and the end of the whole process tree (a pid namespace
where the machine allows it). It merges stderr into stdout; a check's result reader needs
stdout alone (a tool's JSON report), so the command's stderr goes to a file of its own
before the real command is exec'd.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from harness.sandbox import proc

OUTPUT_CAP = 4_000_000
"""Bytes of stdout (and of stderr) kept from one check command."""

_SPLIT = 'exec 2>"$0"; exec "$@"'
"""Runs "$@" with its stderr sent to the file named by $0."""


class Completed(NamedTuple):
    """What a finished (or killed) command left."""

    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool
    capped: bool = False
    """Its stdout passed OUTPUT_CAP and it was ended (exit_code is None)."""
    duration_s: float | None = None
    """How long it ran, when it ran elsewhere (a batch) and not in the caller's own time."""


def run_command(
    argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], timeout_s: float, namespaces: bool = True
) -> Completed:
    """Run argv to its end or its timeout; the whole tree is gone afterwards. `namespaces=False`:
    argv is a sandbox with namespaces of its own (`harness.sandbox.proc.launcher_argv`)."""
    with tempfile.TemporaryDirectory(prefix="assay-check-") as tmp:
        err_file = Path(tmp) / "stderr"
        done = proc.run(
            ["sh", "-c", _SPLIT, str(err_file), *argv],
            cwd=cwd,
            env=env,
            timeout_s=timeout_s,
            output_cap=OUTPUT_CAP,
            capture=True,
            namespaces=namespaces,
        )
        err = err_file.read_bytes()[:OUTPUT_CAP] if err_file.exists() else b""
    return Completed(
        exit_code=done.exit_code,
        stdout=done.output.decode("utf-8", "replace"),
        stderr=err.decode("utf-8", "replace"),
        timed_out=done.timed_out,
        capped=done.output_capped,
    )
