"""A disk that fills mid-matrix stops it in one line that tells how many trials ran: the trials that
ran to their end, not the ones the stop dropped (a real matrix, its runs on a real small tmpfs)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.helpers import matrix_argv, write_jobs
from tests.mounting import tmpfs

ROOT = Path(__file__).resolve().parents[2]
N = 4

pytestmark = [pytest.mark.slow, pytest.mark.faults]


def test_the_stop_counts_the_trials_that_ran(project: Path, root_mounts: Path) -> None:
    disk, jobs, ledger = root_mounts / "disk", root_mounts / "jobs", root_mounts / "ledger"
    tmpfs(disk, "16m")
    # The second agent fills the disk (isolation none: it writes as the harness does); the first ran whole.
    agent = (
        f"echo x >> {ledger}; if [ $(wc -l < {ledger}) -ge 2 ]; then "
        f"dd if=/dev/zero of={disk}/filler bs=65536 2>/dev/null; fi; true"
    )
    write_jobs(jobs, agent, n=N, matrix="faults")
    argv = matrix_argv(project, "--parallel", "1", runs=disk / "runs", jobs=jobs)
    matrix = subprocess.run(
        argv,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert matrix.returncode == 74, matrix.stderr
    assert len(ledger.read_text().split()) == 2, matrix.stderr  # the stop dropped trials 3 and 4
    said = [line for line in matrix.stderr.splitlines() if line.startswith("assay: error")]
    assert len(said) == 1 and "No space left on device" in said[0], matrix.stderr
    assert "the matrix stopped after 1 trial(s)" in said[0], matrix.stderr
