"""The matrix command as a real process: SIGKILL halfway, Ctrl-C, then resume."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from harness.artifacts.records import read_run
from harness.artifacts.run_tree import find_runs
from tests.helpers import files_named, make_job, matrix_argv, sigint_default, started, write_jobs
from tests.runner.test_proc import _wait_gone

N = 8


def _write_jobs(folder: Path, agent_cmd: str, n: int = N) -> list[str]:
    return [job.id for job in write_jobs(folder, agent_cmd, n=n, matrix="m")]


def _matrix(
    project: Path, jobs: Path, runs: Path, *extra: str, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    root = Path(__file__).resolve().parents[2]
    argv = matrix_argv(project, "--parallel", "2", *extra, runs=runs, jobs=jobs)
    env = {**os.environ, "PYTHONPATH": str(root), **(env or {})}
    return started(
        subprocess.Popen(
            argv, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=sigint_default
        )
    )


def _finished(runs: Path) -> list[Path]:
    return find_runs(runs) if runs.exists() else []


def _wait_for(predicate: object, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise AssertionError("timed out waiting")


@pytest.mark.slow
def test_sigkill_halfway_then_rerun_runs_every_trial_exactly_once(project: Path, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger"
    marker = f"0.4{os.getpid()}"
    ids = _write_jobs(tmp_path / "jobs", f"sleep {marker}; echo $BENCH_TRIAL >> {ledger}")
    runs = tmp_path / "runs"
    first = _matrix(project, tmp_path / "jobs", runs)
    _wait_for(lambda: len(_finished(runs)) >= 3)
    first.send_signal(signal.SIGKILL)
    first.communicate()
    # the killed runner's running agents died with it (parent-death signal + pid namespace)
    assert _wait_gone(marker, 10.0) == []
    before = {read_run(d).job_id: read_run(d).started_at for d in _finished(runs)}
    assert 3 <= len(before) < N
    second = _matrix(project, tmp_path / "jobs", runs)
    _out, err = second.communicate(timeout=120)
    assert second.returncode == 0, err.decode()
    runs_found = _finished(runs)
    records = [read_run(d) for d in runs_found]
    assert sorted(r.job_id for r in records) == sorted(ids)
    assert all(r.exit_code == 0 and r.error is None for r in records)
    # finished trials were skipped, not run again
    assert {r.job_id: r.started_at for r in records if r.job_id in before} == before
    # runs killed between run.json and grade.json are graded, not run again; the rest are skipped
    said = err.decode()
    skipped = re.search(r"(\d+) finished trial\(s\) skipped", said)
    graded = re.search(r"(\d+) finished trial\(s\) without a grade are graded", said)
    assert sum(int(m.group(1)) for m in (skipped, graded) if m) == len(before), said
    assert all((d / "grade.json").is_file() for d in runs_found)
    # every trial's agent completed; only the ones killed mid-run appear twice in the ledger
    finished_agents = ledger.read_text().split()
    assert sorted(set(finished_agents)) == sorted(str(t) for t in range(1, N + 1))


@pytest.mark.slow
def test_ctrl_c_records_interrupted_and_resume_finishes(project: Path, tmp_path: Path) -> None:
    # The agents would sleep 600 s: ending well before that proves Ctrl-C killed them instead of
    # waiting for them (a wide margin, so that a loaded machine cannot flip it).
    ids = _write_jobs(tmp_path / "jobs", "sleep 600", n=4)
    runs = tmp_path / "runs"
    first = _matrix(project, tmp_path / "jobs", runs)
    _wait_for(lambda: len(files_named(runs, "agent.log")) >= 2)
    start = time.monotonic()
    first.send_signal(signal.SIGINT)
    try:
        _out, err = first.communicate(timeout=240)
    finally:
        if first.poll() is None:
            first.kill()
            first.communicate()
    assert first.returncode == 130, err.decode()
    assert time.monotonic() - start < 240
    interrupted = [read_run(d) for d in _finished(runs)]
    assert len(interrupted) == 2 and all(r.interrupted for r in interrupted)
    # resume: a quick agent this time, same job hashes
    _write_jobs(tmp_path / "jobs", "exit 0", n=4)
    second = _matrix(project, tmp_path / "jobs", runs)
    _out, err = second.communicate(timeout=60)
    assert second.returncode == 0, err.decode()
    records = [read_run(d) for d in _finished(runs)]
    assert sorted(r.job_id for r in records) == sorted(ids)
    assert not any(r.interrupted for r in records)
    assert json.loads((Path(str(_finished(runs)[0])) / "job.json").read_text())["matrix"] == "m"


def test_plan_skips_only_finished_runs_of_the_same_hash(project: Path, tmp_path: Path) -> None:
    from harness.artifacts.run_tree import run_dir_for
    from harness.batch import plan
    from harness.grade import grade_run
    from harness.trial import run_trial

    runs = tmp_path / "runs"
    done = make_job(trial=1, hash="h1")
    run_trial(done, project=project, run_dir=run_dir_for(done, runs))
    ungraded = plan([done], project=project, runs_root=runs, seed=0)
    assert ungraded.regraded == (done.id,) and ungraded.tasks[0].grade_only  # finished means graded
    grade_run(run_dir_for(done, runs), project=project)
    same = plan([done, make_job(trial=2, hash="h1")], project=project, runs_root=runs, seed=0)
    assert same.skipped == (done.id,) and [t.job.trial for t in same.tasks] == [2]
    changed = plan([make_job(trial=1, hash="h2")], project=project, runs_root=runs, seed=0)
    assert changed.skipped == () and len(changed.tasks) == 1
    forced = plan([done], project=project, runs_root=runs, seed=0, force=True)
    assert len(forced.tasks) == 1


def test_order_is_shuffled_by_the_seed(project: Path, tmp_path: Path) -> None:
    from harness.batch import plan

    jobs = [make_job(trial=t) for t in range(1, 21)]
    order = [t.job.trial for t in plan(jobs, project=project, runs_root=tmp_path, seed=7).tasks]
    again = [
        t.job.trial for t in plan(list(reversed(jobs)), project=project, runs_root=tmp_path, seed=7).tasks
    ]
    other = [t.job.trial for t in plan(jobs, project=project, runs_root=tmp_path, seed=8).tasks]
    assert order == again and order != other and sorted(order) == list(range(1, 21))


@pytest.mark.slow
def test_fail_fast_stops_at_the_first_failed_trial(project: Path, tmp_path: Path) -> None:
    _write_jobs(tmp_path / "jobs", "echo 'def (' > app/main.py", n=4)
    runs = tmp_path / "runs"
    first = _matrix(project, tmp_path / "jobs", runs, "--fail-fast", "--parallel", "1")
    _out, err = first.communicate(timeout=60)
    assert first.returncode == 0, err.decode()
    assert len(_finished(runs)) == 1, err.decode()
    assert "fail 1" in err.decode() and "skipped 3" in err.decode()
