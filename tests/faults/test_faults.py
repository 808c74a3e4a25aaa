"""Fault injection with a real matrix: kill or stop the runner at every stage boundary, then resume.

Every combination of signal (SIGKILL, SIGTERM) and stage (preparing, provisioning, the agent
running, capturing, grading, recording) is run against a 4-trial matrix of the fixture project;
after a plain rerun the tree must hold every trial exactly once, graded, with the verdicts of an
undisturbed run. The runner reaches a stage by `harness.trial.faults` (a marker file, then it
blocks), so no sleep decides where the kill lands. `nox -s faults` prints the table.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from harness.artifacts.records import read_grade, read_run
from harness.artifacts.run_tree import find_runs
from harness.trial.faults import STAGES
from tests.helpers import matrix_argv, started, write_jobs
from tests.mounting import tmpfs

ROOT = Path(__file__).resolve().parents[2]
N = 4
SIGNALS = {"SIGKILL": signal.SIGKILL, "SIGTERM": signal.SIGTERM}
POINTS = (*STAGES[:2], "agent", *STAGES[2:])
RESULTS: dict[tuple[str, str], dict[str, int]] = {}

pytestmark = [pytest.mark.slow, pytest.mark.faults]


def _agent(ledger: Path, faults: Path, *, wait: bool = False) -> str:
    """Odd trials leave a compiling file, even ones break it; each finished agent is in the ledger.
    With `wait`, the first agent announces itself and waits to be killed (the `agent` point)."""
    first = f"if mkdir {faults}/agent.claim 2>/dev/null; then touch {faults}/agent; sleep 60; fi; "
    return (
        (first if wait else "")
        + "if [ $((BENCH_TRIAL % 2)) = 0 ]; then echo 'def (' > app/main.py; fi; "
        + f"echo $BENCH_TRIAL >> {ledger}"
    )


def _write_jobs(folder: Path, command: str) -> None:
    write_jobs(folder, command, n=N, matrix="faults")


def _matrix(project: Path, jobs: Path, runs: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    argv = matrix_argv(project, "--parallel", "1", runs=runs, jobs=jobs)
    return started(
        subprocess.Popen(
            argv,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT), **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    )


def _verdicts(runs: Path) -> dict[int, tuple[str, bool | None]]:
    out: dict[int, tuple[str, bool | None]] = {}
    for run_dir in find_runs(runs):
        grade = read_grade(run_dir)
        out[read_run(run_dir).trial] = (grade.status.value, grade.passed) if grade else ("ungraded", None)
    return out


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> dict[int, tuple[str, bool | None]]:
    import shutil

    from tests.helpers import FIXTURE

    base = tmp_path_factory.mktemp("baseline")
    project = base / "project"
    shutil.copytree(FIXTURE, project, symlinks=True)
    (base / "f").mkdir()
    _write_jobs(base / "jobs", _agent(base / "ledger", base / "f"))
    done = _matrix(project, base / "jobs", base / "runs", {})
    _out, err = done.communicate(timeout=300)
    assert done.returncode == 0, err
    verdicts = _verdicts(base / "runs")
    assert sorted(verdicts) == list(range(1, N + 1))
    assert {v[1] for v in verdicts.values()} == {True, False}  # both verdicts occur
    return verdicts


@pytest.mark.parametrize("point", POINTS)
@pytest.mark.parametrize("sig", list(SIGNALS))
def test_a_stopped_runner_loses_nothing(
    project: Path, tmp_path: Path, baseline: dict[int, tuple[str, bool | None]], sig: str, point: str
) -> None:
    faults, ledger, runs = tmp_path / "f", tmp_path / "ledger", tmp_path / "runs"
    faults.mkdir()
    _write_jobs(tmp_path / "jobs", _agent(ledger, faults, wait=point == "agent"))
    env = {} if point == "agent" else {"ASSAY_FAULT_AT": point, "ASSAY_FAULT_DIR": str(faults)}
    first = _matrix(project, tmp_path / "jobs", runs, env)
    deadline = time.monotonic() + 120
    while not (faults / point).exists():
        assert first.poll() is None, first.communicate()[1]
        assert time.monotonic() < deadline, f"the runner never reached {point}"
        time.sleep(0.02)  # polls for a marker file the runner writes; no verdict rides on timing
    first.send_signal(SIGNALS[sig])
    _out, err = first.communicate(timeout=120)
    if sig == "SIGTERM":
        assert first.returncode == 130, err
        assert "interrupted (SIGTERM)" in err
    # finished before the rerun: run.json written and not interrupted (those must never run again)
    done_before = {read_run(d).trial for d in find_runs(runs) if not read_run(d).interrupted}
    finished_agents = ledger.read_text().split() if ledger.exists() else []
    second = _matrix(project, tmp_path / "jobs", runs, {})
    _out, err2 = second.communicate(timeout=300)
    assert second.returncode == 0, err2
    after = _verdicts(runs)
    ran_again = ledger.read_text().split()[len(finished_agents) :]
    lost = N - sum(1 for v in after.values() if v[0] != "ungraded")
    duplicated = sum(1 for t in ran_again if int(t) in done_before)
    differing = sum(1 for t, v in baseline.items() if after.get(t) != v)
    RESULTS[(sig, point)] = {"lost": lost, "duplicated": duplicated, "differing": differing}
    assert (lost, duplicated, differing) == (0, 0, 0), (after, baseline, err, err2)
    assert not list((runs / ".scratch").glob("*/*")), "scratch left after a clean finish"


def test_zz_print_the_fault_table() -> None:
    """The table `nox -s faults` shows (runs last in this module)."""
    if not RESULTS:
        pytest.skip("no fault case ran in this session")
    lines = [f"{'signal':8} {'stage':13} lost duplicated differing"]
    for (sig, point), counts in sorted(RESULTS.items()):
        lines.append(
            f"{sig:8} {point:13} {counts['lost']:4} {counts['duplicated']:10} {counts['differing']:9}"
        )
    totals = {k: sum(c[k] for c in RESULTS.values()) for k in ("lost", "duplicated", "differing")}
    lines.append(f"{'total':22} {totals['lost']:4} {totals['duplicated']:10} {totals['differing']:9}")
    print("\n" + "\n".join(lines))
    assert totals == {"lost": 0, "duplicated": 0, "differing": 0}


@pytest.fixture
def small_disk(root_mounts: Path) -> Path:
    """A 4 MiB tmpfs mounted for the test (root only), detached after it (`root_mounts`)."""
    return tmpfs(root_mounts / "disk", "4m")


def test_a_full_disk_stops_in_one_line_and_resume_finishes(
    project: Path, tmp_path: Path, small_disk: Path, baseline: dict[int, tuple[str, bool | None]]
) -> None:
    _write_jobs(tmp_path / "jobs", _agent(tmp_path / "ledger", tmp_path))
    runs = small_disk / "runs"
    runs.mkdir()
    filler = small_disk / "filler"
    with filler.open("wb") as fh, contextlib.suppress(OSError):  # fill the disk to its last byte
        while True:
            fh.write(b"\0" * 65536)
            fh.flush()
    full = _matrix(project, tmp_path / "jobs", runs, {})
    _out, err = full.communicate(timeout=120)
    assert full.returncode == 74, err
    said = [line for line in err.splitlines() if line.startswith("assay: error")]
    assert len(said) == 1 and "No space left on device" in said[0] and str(runs) in said[0], err
    assert "Traceback" not in err
    assert not any((d / "run.json").exists() for d in runs.rglob("trial-*"))  # nothing looks finished
    filler.unlink()
    resumed = _matrix(project, tmp_path / "jobs", runs, {})
    _out, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err
    assert _verdicts(runs) == baseline


def _mounts(folder: Path) -> list[str]:
    return [line for line in Path("/proc/self/mountinfo").read_text().splitlines() if f" {folder}/" in line]


def test_a_killed_runner_leaves_no_mount_once_the_next_starts(project: Path, tmp_path: Path) -> None:
    """A SIGKILLed runner cannot unmount its trial's size-limited filesystems; the next runner
    removes them before it clears the run directory, and finishes the matrix."""
    if os.geteuid() != 0:
        pytest.skip("only a root harness mounts size-limited filesystems for its trials")
    faults, runs = tmp_path / "f", tmp_path / "runs"
    faults.mkdir()
    _write_jobs(tmp_path / "jobs", _agent(tmp_path / "ledger", faults, wait=True))
    first = _matrix(project, tmp_path / "jobs", runs, {})
    deadline = time.monotonic() + 120
    while not (faults / "agent").exists():
        assert first.poll() is None, first.communicate()[1]
        assert time.monotonic() < deadline, "the agent never started"
        time.sleep(0.02)  # polls for a marker file the agent writes; no verdict rides on timing
    assert _mounts(runs), "the running trial has no size-limited filesystem"
    first.send_signal(signal.SIGKILL)
    first.communicate(timeout=120)
    assert _mounts(runs), "mounts vanished with a SIGKILLed runner: the test proves nothing"
    second = _matrix(project, tmp_path / "jobs", runs, {})
    _out, err = second.communicate(timeout=300)
    assert second.returncode == 0, err
    assert _mounts(runs) == []
    assert sorted(v[0] for v in _verdicts(runs).values()) == ["graded"] * N
