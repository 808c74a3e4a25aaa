"""Helpers shared by the test packages (fixtures live in tests/conftest.py).

`assay` runs the real CLI in this process: `harness.cli.main(argv)` with stdout and stderr
captured, the exit code returned the way a subprocess would give it. One smoke test
(tests/test_cli_smoke.py) still spawns `python -m harness`; tests that signal or kill the
CLI process start it themselves.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path

from harness.cli import main

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"


@contextlib.contextmanager
def _environ(env: Mapping[str, str] | None) -> Iterator[None]:
    """os.environ replaced by env for the duration (unchanged when None)."""
    if env is None:
        yield
        return
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def assay(
    *args: str | Path, cwd: Path | None = None, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`assay ARGS` in this process, in cwd (default: the current folder), under env (default: ours).

    Returns what `subprocess.run(..., capture_output=True, text=True)` would: the exit code
    `main` returns (or argparse's SystemExit code) and everything written to stdout and stderr.
    """
    argv = [str(a) for a in args]
    out, err = io.StringIO(), io.StringIO()
    with (
        contextlib.chdir(cwd or Path.cwd()),
        _environ(env),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse: --help and usage errors; as the interpreter would exit
            if isinstance(exc.code, str):
                print(exc.code, file=err)
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return subprocess.CompletedProcess(["assay", *argv], code, out.getvalue(), err.getvalue())
