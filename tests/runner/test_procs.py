"""The local pool across forked worker processes (`harness.batch.executor.procs`), through the CLI."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from harness.artifacts.records import read_grade, read_run
from harness.batch.executor import procs
from tests.helpers import files_named
from tests.runner.test_matrix import _finished, _matrix, _wait_for, _write_jobs
from tests.runner.test_proc import _wait_gone


def _workers(runner: int) -> list[int]:
    """The runner's child processes that are Python (its forked workers)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            comm = (entry / "comm").read_text().strip()
        except OSError:
            continue
        if int(fields[1]) == runner and comm.startswith("python"):
            found.append(int(entry.name))
    return sorted(found)


def _agents_started(runs: Path, n: int) -> bool:
    return len(files_named(runs, "agent.log")) >= n


def test_the_pool_is_used_only_where_it_can_help(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSAY_LOCAL_PROCESSES", "2")
    assert procs.planned(parallel=4, tasks=10) == 2
    assert procs.planned(parallel=1, tasks=10) == 0  # one slot: nothing to spread
    assert procs.planned(parallel=4, tasks=1) == 0  # one trial: a fork would only cost
    monkeypatch.setenv("ASSAY_LOCAL_PROCESSES", "0")
    assert procs.planned(parallel=4, tasks=10) == 0


def test_never_forked_while_another_thread_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSAY_LOCAL_PROCESSES", "2")
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert procs.usable(parallel=4, tasks=10) == 0
    finally:
        stop.set()
        other.join()


def test_the_launcher_is_probed_once_before_the_pool_starts_however_many_threads_ask(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import shutil
    import subprocess

    from harness.batch.executor.task import warm
    from harness.sandbox import proc

    started: list[str] = []
    real = subprocess.run

    def counted(argv: list[str], **kwargs: object) -> object:
        started.append(os.path.basename(argv[0]))
        time.sleep(0.05)  # a slow probe: every thread asks while the first still waits for it
        return real(argv, **kwargs)  # type: ignore[call-overload]

    expected = sorted(name for name in ("setpriv", "unshare") if shutil.which(name))
    proc._pidns_probe.cache_clear()
    proc._pdeathsig_probe.cache_clear()
    monkeypatch.setattr(subprocess, "run", counted)
    threads = [threading.Thread(target=proc.pidns_available) for _ in range(4)]
    threads += [threading.Thread(target=proc._pdeathsig_prefix) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(started) == expected  # one probe each, not one per thread
    proc._pidns_probe.cache_clear()
    proc._pdeathsig_probe.cache_clear()
    started.clear()
    warm("none")  # what the runner does before it forks: the workers inherit both answers
    proc.pidns_available()
    proc._pdeathsig_prefix()
    assert sorted(started) == expected


@pytest.mark.slow
def test_trials_run_in_forked_workers_and_every_outcome_comes_back(project: Path, tmp_path: Path) -> None:
    marker = f"1.{os.getpid()}"
    ids = _write_jobs(tmp_path / "jobs", f"sleep {marker}", n=4)
    runs = tmp_path / "runs"
    runner = _matrix(project, tmp_path / "jobs", runs, env={"ASSAY_LOCAL_PROCESSES": "2"})
    _wait_for(lambda: _agents_started(runs, 2))
    workers = _workers(runner.pid)
    _out, err = runner.communicate(timeout=120)
    assert runner.returncode == 0, err.decode()
    assert len(workers) == 2, workers  # two slots, two workers, each running a trial
    records = [read_run(d) for d in _finished(runs)]
    assert sorted(r.job_id for r in records) == sorted(ids)
    assert all(r.exit_code == 0 and r.error is None for r in records)
    assert all(read_grade(d) is not None for d in _finished(runs))
    assert all((d / "view.html").is_file() for d in _finished(runs))  # written by the workers
    said = err.decode()
    assert said.count("[4/4]") == 1  # progress is the runner's alone, nothing written twice
    assert said.count("[1/4]") == 1


@pytest.mark.slow
def test_a_worker_killed_midway_leaves_an_error_and_its_trial_runs_again(
    project: Path, tmp_path: Path
) -> None:
    marker = f"3.{os.getpid()}"
    ids = _write_jobs(tmp_path / "jobs", f"sleep {marker}", n=4)
    runs = tmp_path / "runs"
    runner = _matrix(project, tmp_path / "jobs", runs, env={"ASSAY_LOCAL_PROCESSES": "2"})
    _wait_for(lambda: _agents_started(runs, 2))
    workers = _workers(runner.pid)
    assert len(workers) == 2
    os.kill(workers[0], signal.SIGKILL)
    _out, err = runner.communicate(timeout=120)
    said = err.decode()
    assert runner.returncode == 1, said  # a harness-side error, said, not a crash
    assert "error 1" in said and "passed 3" in said, said
    assert "error: the worker process running it died (killed by SIGKILL)" in said, said
    assert _wait_gone(marker, 10.0) == []  # the dead worker's agent died with it
    assert len(_finished(runs)) == 3
    again = _matrix(project, tmp_path / "jobs", runs, env={"ASSAY_LOCAL_PROCESSES": "2"})
    _out, err = again.communicate(timeout=120)
    assert again.returncode == 0, err.decode()
    assert "3 finished trial(s) skipped" in err.decode()
    assert sorted(read_run(d).job_id for d in _finished(runs)) == sorted(ids)


@pytest.mark.slow
def test_ctrl_c_reaches_the_trials_of_every_worker(project: Path, tmp_path: Path) -> None:
    ids = _write_jobs(tmp_path / "jobs", "sleep 600", n=4)
    runs = tmp_path / "runs"
    runner = _matrix(project, tmp_path / "jobs", runs, env={"ASSAY_LOCAL_PROCESSES": "2"})
    _wait_for(lambda: _agents_started(runs, 2))
    workers = _workers(runner.pid)
    assert len(workers) == 2
    start = time.monotonic()
    runner.send_signal(signal.SIGINT)
    _out, err = runner.communicate(timeout=240)
    assert runner.returncode == 130, err.decode()
    assert time.monotonic() - start < 120  # the agents were killed, not waited for
    interrupted = [read_run(d) for d in runs.rglob("trial-*") if (d / "run.json").is_file()]
    assert len(interrupted) == 2 and all(r.interrupted for r in interrupted)
    for pid in workers:  # the workers left with the runner
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert len(ids) == 4


@pytest.mark.slow
def test_a_runner_killed_takes_its_workers_along(project: Path, tmp_path: Path) -> None:
    marker = f"600.{os.getpid()}"
    _write_jobs(tmp_path / "jobs", f"sleep {marker}", n=4)
    runs = tmp_path / "runs"
    runner = _matrix(project, tmp_path / "jobs", runs, env={"ASSAY_LOCAL_PROCESSES": "2"})
    _wait_for(lambda: _agents_started(runs, 2))
    workers = _workers(runner.pid)
    assert len(workers) == 2
    runner.send_signal(signal.SIGKILL)
    runner.communicate()
    assert _wait_gone(marker, 10.0) == []
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(pid) for pid in workers):
        time.sleep(0.05)
    assert not any(_alive(pid) for pid in workers)


def _alive(pid: int) -> bool:
    """True while the process exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
