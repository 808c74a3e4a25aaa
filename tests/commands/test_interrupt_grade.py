"""Ctrl-C says what the interrupted command left: a grader ran no trial, so it says its grades are kept."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from compiler.contract import CheckSpec
from harness.artifacts.names import GRADE_FILE
from harness.artifacts.run_tree import find_runs
from tests.helpers import assay, assay_argv, command_agent, fix_scenario, make_job, sigint_default

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_an_interrupted_grade_says_its_grades_are_kept_not_that_trials_were(
    project: Path, tmp_path: Path, stop: signal.Signals
) -> None:
    gate, started = tmp_path / "gate", tmp_path / "started"
    # The check blocks once the gate is open: the matrix grades at once, the regrade below waits.
    slow = f"if [ -e {gate} ]; then touch {started}; sleep 600; fi; python3 -m py_compile app/main.py"
    scenario = fix_scenario(checks=(CheckSpec(id="compiles", kind="command", params={"run": slow}),))
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    job = make_job(scenario, agent=command_agent("exit 0"), matrix="m")
    (jobs / "t01.json").write_text(job.model_dump_json())
    runs = tmp_path / "runs"
    done = assay("--project", project, "matrix", "--job-file", jobs, "--runs", runs)
    assert done.returncode == 0, done.stderr
    (run_dir,) = find_runs(runs)
    before = (run_dir / GRADE_FILE).read_bytes()
    gate.touch()
    grading = subprocess.Popen(
        assay_argv(project, "grade", runs, "--regrade"),
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=sigint_default,
    )
    try:
        deadline = time.monotonic() + 60
        while not started.exists() and grading.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert started.exists(), "the check never started"
        grading.send_signal(stop)
        _out, err = grading.communicate(timeout=120)
    finally:
        if grading.poll() is None:
            grading.kill()
            grading.communicate()
    assert grading.returncode == 130, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("assay: interrupted"), err
    assert "trials" not in lines[0] and "grades written before it are kept" in lines[0], err
    assert (run_dir / GRADE_FILE).read_bytes() == before  # the grade in progress was never half-written
