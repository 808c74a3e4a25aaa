"""The one test that spawns `python -m harness`: the real entry point, and the in-process runner's equivalence.

Every other CLI test calls `tests.helpers.assay`, which runs `harness.cli.main` in this process.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.compiler.corpus import materialise
from tests.helpers import FIXTURES, ROOT, assay, assay_argv


def _spawn(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness", *map(str, args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_python_m_harness_exit_codes_and_output_match_the_in_process_runner(tmp_path: Path) -> None:
    valid = FIXTURES / "specs" / "valid"
    ok = _spawn("--project", valid, "compile", "--check")
    assert ok.returncode == 0 and "specs are valid (2 scenarios, 18 trials)" in ok.stdout, ok.stderr
    bad = materialise("negatives-wrong", tmp_path / "bad")
    failed = _spawn("--project", bad, "compile", "--out", tmp_path / "g")
    assert failed.returncode == 2 and failed.stderr.endswith("4 error(s)\n")
    usage = _spawn("--project", valid, "no-such-command")
    assert usage.returncode == 2 and "invalid choice" in usage.stderr
    for spawned, argv in (
        (ok, ("--project", valid, "compile", "--check")),
        (failed, ("--project", bad, "compile", "--out", tmp_path / "g")),
        (usage, ("--project", valid, "no-such-command")),
    ):
        inside = assay(*argv, cwd=ROOT)
        assert (inside.returncode, inside.stdout, inside.stderr) == (
            spawned.returncode,
            spawned.stdout,
            spawned.stderr,
        )


def test_python_m_harness_in_a_bench_folder_with_its_own_adapters(tmp_path: Path) -> None:
    """Seed 000's bench folder has an `adapters/` of its own; `python -m harness` run there must not
    take it for assay's package (it did: an empty namespace package, and a TypeError at start-up)."""
    (tmp_path / "adapters").mkdir()
    (tmp_path / "adapters" / "my_agent.py").write_text("print('mine')\n")
    valid = FIXTURES / "specs" / "valid"
    done = subprocess.run(
        [sys.executable, "-m", "harness", "--project", str(valid), "compile", "--check"],
        cwd=tmp_path,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},  # assay as installed
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0 and "specs are valid" in done.stdout, done.stderr


def test_a_command_loads_its_own_module_alone() -> None:
    """`assay report` does not import the runner (half a second of a report over a big tree); the
    command is found after the global options, and help or an unknown name loads every command."""
    from harness.cli import requested

    assert requested(["--project", "p", "report", "runs"]) == "report"
    assert requested(["--project=p", "plan", "--help"]) == "plan"
    assert [requested(a) for a in (["--help"], [], ["no-such-command"], ["-x", "report"])] == [None] * 4
    probe = (
        "import sys\nfrom harness.cli import build_parser, requested\n"
        "parser = build_parser(requested(['report', 'runs']))\n"
        "print(sorted(m for m in ('harness.batch', 'harness.trial', 'harness.commands.run') if m in sys.modules))\n"
        "print(parser.parse_args(['report', 'runs']).command)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.split("\n")[:2] == ["[]", "report"], done.stderr


def test_a_reader_that_stops_reading_ends_assay_quietly() -> None:
    """`assay compile | head`: the pipe is closed before assay writes, so every write fails (EPIPE);
    assay ends with SIGPIPE's status and no traceback."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            assay_argv(FIXTURES / "specs" / "valid", "compile", "--check"),
            cwd=ROOT,
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
    finally:
        os.close(write_end)
    assert done.returncode == 128 + signal.SIGPIPE, done.stderr
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr
