"""A real scheduler and real worker processes on loopback, driven through `assay matrix`.

Must-show 2 (must-show 1 is in test_demo_matrix.py): Ctrl-C on the client leaves no
agent process alive on any worker. Plus requirements, resource tags and per-worker slots.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.artifacts.records import read_grade, read_run
from harness.artifacts.run_tree import find_runs
from tests.dask.conftest import (
    ROOT,
    Cluster,
    alive,
    cells,
    child_env,
    cluster_job,
    matrix_argv,
    on_cluster,
    spawn,
    wait_for,
    write_jobs,
)
from tests.helpers import command_agent

pytestmark = pytest.mark.dask


@pytest.mark.parametrize("trial_process", ["0", "1"], ids=["in-thread", "trial-process"])
def test_ctrl_c_on_the_client_leaves_no_agent_alive_on_any_worker(
    cluster: Cluster, project: Path, tmp_path: Path, trial_process: str
) -> None:
    cluster.add_worker("a", ASSAY_DASK_TRIAL_PROCESS=trial_process)
    cluster.add_worker("b", ASSAY_DASK_TRIAL_PROCESS=trial_process)
    control, _binary = cells()
    marker = f"{600 + random.randrange(1000)}.{os.getpid()}{random.randrange(10**6)}"
    # A grandchild that leaves the agent's process group must die too.
    agent = command_agent(f"(setsid sleep {marker}1 &) ; sleep {marker}")
    jobs = [cluster_job(agent, control, trial) for trial in range(1, 9)]
    runs = tmp_path / "runs"
    client = spawn(
        matrix_argv(
            project,
            "--executor",
            "dask",
            "--scheduler-file",
            str(cluster.scheduler_file),
            runs=runs,
            jobs=write_jobs(tmp_path / "jobs", jobs),
        ),
        log=tmp_path / "client.log",
        env=child_env(),
        new_session=False,
    )
    try:
        wait_for(
            lambda: len(alive(f"{marker}1", argv0="sleep")) == 4, "4 running trials (2 workers x 2 threads)"
        )
        client.send_signal(signal.SIGINT)
        assert client.wait(timeout=60) == 130
    finally:
        client.kill()
        client.wait()
    assert alive(marker) == [], "agent processes survived Ctrl-C"
    interrupted = [read_run(p) for p in find_runs(runs)]
    assert len(interrupted) == 4
    assert all(r.interrupted for r in interrupted), "running trials record themselves as interrupted"


def test_a_worker_lacking_what_the_agent_requires_fails_to_run_with_the_reason(
    cluster: Cluster, project: Path, tmp_path: Path
) -> None:
    cluster.add_worker("a")
    control, _binary = cells()
    jobs = [
        cluster_job(command_agent("true", requires=("assay-no-such-cli",), id="ghost"), control, 1),
        cluster_job(command_agent("true", requires=("python3>=99",), id="future"), control, 1),
        cluster_job(command_agent("true", requires=("python3>=3", "sh"), id="fine"), control, 1),
    ]
    runs = tmp_path / "runs"
    done = on_cluster(project, cluster, runs=runs, jobs=write_jobs(tmp_path / "jobs", jobs))
    assert done.returncode == 1, done.stderr
    records = {r.agent: r for r in map(read_run, find_runs(runs))}
    assert "assay-no-such-cli: not found on PATH" in (records["ghost"].error or "")
    assert "does not satisfy python3>=99" in (records["future"].error or "")
    assert records["fine"].error is None and records["fine"].exit_code == 0
    for agent in ("ghost", "future"):
        grade = read_grade(find_runs(runs / "dasktest" / "fix" / agent)[0])
        if grade is not None:
            assert grade.status.value == "failed_to_run"


def _intervals(log: Path) -> dict[str, list[tuple[float, float]]]:
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    starts = {r["id"]: r for r in rows if r["at"] == "start"}
    by_worker: dict[str, list[tuple[float, float]]] = {}
    for row in rows:
        if row["at"] == "end":
            start = starts[row["id"]]
            by_worker.setdefault(start["worker"], []).append((start["t"], row["t"]))
    return by_worker


def _peak(intervals: list[tuple[float, float]]) -> int:
    events = sorted([(s, 1) for s, _ in intervals] + [(e, -1) for _, e in intervals])
    peak = current = 0
    for _t, step in events:
        current += step
        peak = max(peak, current)
    return peak


def test_resource_tags_route_jobs_and_parallel_caps_each_worker(
    cluster: Cluster, project: Path, tmp_path: Path
) -> None:
    log = tmp_path / "intervals.jsonl"
    cluster.add_worker("plain", nthreads=4, ASSAY_TEST_WORKER="plain")
    cluster.add_worker("gpu", nthreads=4, resources="gpu=1", ASSAY_TEST_WORKER="gpu")
    record = (
        'python3 -c \'import json,os,sys,time; print(json.dumps({"id": os.environ["BENCH_TRIAL"] + sys.argv[1],'
        ' "at": sys.argv[2], "worker": os.environ["ASSAY_TEST_WORKER"], "t": time.time()}))\''
    )
    control, _binary = cells()

    def agent(tag: str) -> str:
        return f"{record} {tag} start >> {log}; sleep 1; {record} {tag} end >> {log}"

    gpu_jobs = [
        cluster_job(
            command_agent(agent("g"), requires=("resource:gpu",), id="gpu-agent"),
            control,
            t,
            env_pass=("ASSAY_TEST_WORKER",),
        )
        for t in range(1, 4)
    ]
    any_jobs = [
        cluster_job(command_agent(agent("a"), id="any-agent"), control, t, env_pass=("ASSAY_TEST_WORKER",))
        for t in range(1, 7)
    ]
    done = on_cluster(
        project,
        cluster,
        "--parallel",
        "1",
        runs=tmp_path / "runs",
        jobs=write_jobs(tmp_path / "jobs", gpu_jobs + any_jobs),
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert {r["worker"] for r in rows if r["id"].endswith("g")} == {"gpu"}, (
        "resource:gpu ran only where gpu=1"
    )
    by_worker = _intervals(log)
    assert sum(len(v) for v in by_worker.values()) == 9
    assert {w: _peak(v) for w, v in by_worker.items()} == {"plain": 1, "gpu": 1}, "--parallel 1 per worker"

    log.unlink()
    done = on_cluster(
        project,
        cluster,
        "--force",
        runs=tmp_path / "runs",
        jobs=write_jobs(tmp_path / "jobs2", any_jobs),
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    assert max(_peak(v) for v in _intervals(log).values()) >= 2, (
        "without --parallel a worker uses its threads"
    )


DEADLINE_CLIENT = """
import sys, threading
from pathlib import Path
from compiler.contract import Job
from harness.batch import plan
from harness.batch.executor.dask import DaskExecutor, DaskSettings

project, runs, scheduler_file, slack = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], float(sys.argv[4])
jobs = [Job.model_validate_json(p.read_text()) for p in sorted(Path(sys.argv[5]).glob("*.json"))]
tasks = plan(jobs, project=project, runs_root=runs, seed=0).tasks
executor = DaskExecutor(DaskSettings(scheduler_file=scheduler_file, slack_s=slack))
for outcome in executor.run(tasks, parallel=0, on_outcome=lambda o: None, cancel=threading.Event()):
    print(outcome.status, outcome.detail)
"""


@pytest.mark.parametrize("trial_process", ["0", "1"], ids=["in-thread", "trial-process"])
def test_a_trial_past_its_hard_deadline_is_ended_and_fails_to_run(
    cluster: Cluster, project: Path, tmp_path: Path, trial_process: str
) -> None:
    cluster.add_worker("a", ASSAY_DASK_TRIAL_PROCESS=trial_process)
    control, _binary = cells()
    marker = f"{700 + random.randrange(1000)}.{os.getpid()}{random.randrange(10**6)}"
    job = cluster_job(command_agent(f"sleep {marker}"), control, 1, timeout_s=60)
    # Deadline = 60 s agent limit + 60 s check limit + slack: -117 leaves 3 s.
    started = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            DEADLINE_CLIENT,
            str(project),
            str(tmp_path / "runs"),
            str(cluster.scheduler_file),
            "-117",
            str(write_jobs(tmp_path / "jobs", [job])),
        ],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started < 40, "ended at the deadline, not at the agent's own 60 s limit"
    assert "hard deadline of 3 s" in done.stdout
    assert alive(marker) == []
    record = read_run(find_runs(tmp_path / "runs")[0])
    assert record.error is not None and "hard deadline of 3 s" in record.error
    assert not record.interrupted, "recorded as failed to run, not as interrupted (which would rerun forever)"


def test_fail_fast_stops_the_trials_on_the_cluster(cluster: Cluster, project: Path, tmp_path: Path) -> None:
    cluster.add_worker("a", nthreads=1)
    control, _binary = cells()
    jobs = [
        cluster_job(command_agent("sleep 1"), control, trial) for trial in range(1, 7)
    ]  # never fixes: failed
    done = on_cluster(
        project,
        cluster,
        "--fail-fast",
        runs=tmp_path / "runs",
        jobs=write_jobs(tmp_path / "jobs", jobs),
    )
    summary = done.stderr.strip().splitlines()[-1]
    assert "failed 1" in summary and "skipped" in summary, done.stderr
    finished = [read_run(p) for p in find_runs(tmp_path / "runs")]
    assert len([r for r in finished if not r.interrupted]) == 1


def test_a_worker_running_other_assay_code_is_refused(
    cluster: Cluster, project: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other-assay"
    for package in ("compiler", "harness", "adapters"):
        shutil.copytree(ROOT / package, other / package, ignore=shutil.ignore_patterns("__pycache__"))
    with (other / "harness" / "artifacts" / "records.py").open("a") as fh:
        fh.write("# a different build\n")
    cluster.add_worker("stranger", PYTHONPATH=str(other))
    control, _binary = cells()
    done = on_cluster(
        project,
        cluster,
        runs=tmp_path / "runs",
        jobs=write_jobs(tmp_path / "jobs", [cluster_job(command_agent("true"), control, 1)]),
    )
    assert done.returncode == 2, done.stderr
    assert "run different assay code than this client" in done.stderr
    assert find_runs(tmp_path / "runs") == []
