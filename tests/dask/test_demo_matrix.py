"""Must-show 1 on a real scheduler and real worker processes: the demo matrix with a worker
killed halfway (and then the client too), a resume, every trial exactly once, verdicts identical
to the local pool's."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from harness.artifacts.names import RUN_FILE
from harness.artifacts.records import read_grade, read_run
from harness.artifacts.run_tree import find_runs
from tests.dask.conftest import ROOT, Cluster, child_env, finished_runs, spawn, wait_for
from tests.helpers import assay, assay_argv

pytestmark = pytest.mark.dask


_TIMINGS = frozenset({"graded_at", "duration_s", "started_at", "ended_at", "t"})


_RUFF_CACHE = re.compile(r"^\.ruff_cache/[^/]+/\d+$")


def _untimed(value: object) -> object:
    """A grade without its timings, and with ruff's cache files (named by a hash of the
    workspace's absolute path, so different in any two run trees) under one name."""
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in sorted(value.items()) if k not in _TIMINGS}
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    if isinstance(value, str) and _RUFF_CACHE.match(value):
        return ".ruff_cache/<hash of the workspace path>"
    return value


def _verdicts(runs: Path) -> dict[str, tuple[object, ...]]:
    """What a report reads from each run: exit, error, invalid, how many unsafe edits, the grade.

    The whole grade.json is compared, timings and ruff's path-keyed cache names aside;
    diff.patch is not (it holds that cache's bytes).
    """
    found: dict[str, tuple[object, ...]] = {}
    for run_dir in find_runs(runs):
        record = read_run(run_dir)
        grade = read_grade(run_dir)
        passed = None if grade is None else grade.passed
        graded = None
        if (run_dir / "grade.json").is_file():
            data = json.loads((run_dir / "grade.json").read_text())
            # Order against the last write: snapshot times are when the watcher saw a write, so a
            # command run within milliseconds of it lands on either side, on any executor.
            data["expectations"] = sorted(e["id"] for e in data.get("expectations", []))
            data.get("friction", {}).pop("identical_repeats", None)
            # Polled, so timing too: a write and a rewrite within one poll interval are one
            # snapshot, and a snapshot's time (the file's mtime, clamped into the poll window)
            # lands on either side of a usage row written a fraction of a millisecond later.
            data.pop("snapshots", None)
            data.get("usage", {}).pop("tokens_to_first_valid", None)
            graded = json.dumps(_untimed(data), sort_keys=True)
        edits = len(record.unsafe_edits)
        found[record.job_id] = (record.exit_code, record.error, record.invalid, edits, passed, graded)
    return found


DEMO_INPUTS = ("specs", "scenarios", "tools", "guides", "wiki")


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    """A copy of this repository's example project, compiled (its demo matrix: scripted, oracle
    and no-op agents x none/none/off and bin/none/off x the held-out scenarios)."""
    project = tmp_path / "demo"
    for name in DEMO_INPUTS:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, project / name, symlinks=True)
    done = assay("--project", project, "compile")
    assert done.returncode == 0, done.stderr
    return project


def _demo(project: Path, runs: Path, *args: str) -> list[str]:
    return assay_argv(project, "matrix", "demo", "--trials", "1", "--runs", runs, *args)


def test_demo_matrix_survives_a_killed_worker_and_client_then_resumes_every_trial_once(
    cluster: Cluster, demo: Path, tmp_path: Path
) -> None:
    local_runs = tmp_path / "runs-local"
    done = subprocess.run(
        _demo(demo, local_runs, "--parallel", "4"),
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    local = _verdicts(local_runs)
    total = len(local)
    assert total >= 12
    assert {v[4] for v in local.values()} == {True, False}, "the demo mixes verdicts"

    cluster.add_worker("a")
    cluster.add_worker("b")
    runs = tmp_path / "runs-dask"
    dask_args = ("--executor", "dask", "--scheduler-file", str(cluster.scheduler_file))
    client = spawn(
        _demo(demo, runs, *dask_args), log=tmp_path / "client.log", env=child_env(), new_session=False
    )
    try:
        wait_for(lambda: finished_runs(runs) >= total // 4, "a quarter of the trials")
        cluster.kill_worker("a")  # mid-trial: worker a had trials running
        wait_for(lambda: finished_runs(runs) >= total * 2 // 3, "two thirds of the trials")
        client.kill()
    finally:
        client.kill()
        client.wait()
    before = {p: (p / RUN_FILE).read_bytes() for p in find_runs(runs)}
    assert total * 2 // 3 <= len(before) < total, "the client was killed with trials left to run"
    for run_dir in before:  # whatever looks finished is whole
        assert run_dir.name.startswith("trial-"), run_dir
        assert (run_dir / "job.json").is_file() and (run_dir / "workspace").is_dir()

    cluster.add_worker("c")
    done = subprocess.run(
        _demo(demo, runs, *dask_args), env=child_env(), capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    assert f"{len(before)} finished trial(s) skipped" in done.stderr

    after = find_runs(runs)
    assert len(after) == total
    assert sorted(read_run(p).job_id for p in after) == sorted(local)
    for run_dir, data in before.items():
        assert (run_dir / RUN_FILE).read_bytes() == data, f"{run_dir} was run twice"
    assert not list(runs.rglob(".trial-*")), "no leftovers of an install"
    assert _verdicts(runs) == local
