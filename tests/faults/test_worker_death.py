"""A worker process of the local pool killed mid-trial (SIGKILL): its runner cleans up after it.

The runner forks one worker per core (`harness.batch.executor.procs`); a worker killed on its own
cannot unmount its trial's size-limited filesystems or remove its cgroups, and its runner lives on,
so nothing of a later run would see them as abandoned either. The runner must: once the matrix is
over, nothing of the dead worker's is mounted, no cgroup of it is left, none of its processes
runs, and the other worker's trials were never touched (they are all graded).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.artifacts.records import read_grade
from harness.artifacts.run_tree import find_runs
from tests.helpers import matrix_argv, write_jobs
from tests.mounting import mounts_under

ROOT = Path(__file__).resolve().parents[2]
N = 4
CGROUPS = Path("/sys/fs/cgroup")

pytestmark = [pytest.mark.slow, pytest.mark.faults]


def _ppid(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _running(token: str) -> list[int]:
    """Processes whose command line holds token."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if token.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _worker_of(pid: int, runner: int) -> int:
    """The runner's child that pid descends from."""
    while (parent := _ppid(pid)) != runner:
        assert parent > 1, "not a descendant of the runner"
        pid = parent
    return pid


def _cgroups_of(runner: int) -> list[Path]:
    return [p for p in CGROUPS.glob("*/assay/*") if p.is_dir() and f"-p{runner}" in p.name]


@pytest.fixture
def runners() -> Iterator[list[subprocess.Popen[str]]]:
    """Runners a test started: killed if still running after it, and their cgroups removed,
    whatever it found."""
    started: list[subprocess.Popen[str]] = []
    yield started
    for runner in started:
        if runner.poll() is None:
            runner.kill()  # its workers and their agents die with it (parent-death signals)
            runner.communicate()
        for path in _cgroups_of(runner.pid):
            for _ in range(200):  # its last processes may still be leaving
                with contextlib.suppress(FileNotFoundError):
                    try:
                        path.rmdir()
                    except OSError:
                        time.sleep(0.01)
                        continue
                break


def test_a_killed_worker_leaves_nothing_once_its_runner_is_done(
    project: Path, root_mounts: Path, runners: list[subprocess.Popen[str]]
) -> None:
    tmp_path = root_mounts
    faults, runs, jobs = tmp_path / "f", tmp_path / "runs", tmp_path / "jobs"
    faults.mkdir()
    # The first agent announces itself and waits to be killed with its worker; the others finish.
    # Its shell is named {faults}/waiting (spelt so that no other command line holds it): the
    # test finds it, and its worker, by that name.
    agent = (
        f"if mkdir {faults}/claim 2>/dev/null; then "
        f"W=wait; exec sh -c 'touch \"$1\"; sleep 600' {faults}/${{W}}ing {faults}/agent; fi"
    )
    write_jobs(jobs, agent, n=N, matrix="faults")
    argv = matrix_argv(project, "--parallel", "2", runs=runs, jobs=jobs)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ASSAY_LOCAL_PROCESSES": "2"}
    matrix = subprocess.Popen(
        argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    runners.append(matrix)
    deadline = time.monotonic() + 120
    while not (faults / "agent").exists():
        assert matrix.poll() is None, matrix.communicate()[1]
        assert time.monotonic() < deadline, "the agent never started"
        time.sleep(0.02)  # polls for a marker file the agent writes; no verdict rides on timing
    waiting = _running(f"{faults}/waiting")
    assert len(waiting) == 1, "the waiting agent's process was not found"
    assert mounts_under(runs) and _cgroups_of(matrix.pid), (
        "the trial has nothing to leave: the test proves nothing"
    )
    os.kill(_worker_of(waiting[0], matrix.pid), signal.SIGKILL)
    _out, err = matrix.communicate(timeout=300)
    assert matrix.returncode == 1, err
    assert "the worker process running it died (killed by SIGKILL)" in err
    assert mounts_under(runs) == []  # the trial's filesystems, and grading scratch of the worker's
    assert _cgroups_of(matrix.pid) == []
    assert _running(f"{faults}/waiting") == []
    graded = [d for d in find_runs(runs) if read_grade(d) is not None]
    assert len(graded) == N - 1, err  # the other worker's trials ran as if nothing happened
