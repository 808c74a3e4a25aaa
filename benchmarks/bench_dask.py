"""Dask executor benchmark: N trials of an agent that sleeps 2 s, local pool vs a Dask cluster.

The same job files run twice at the same total concurrency: the local pool with
`--parallel W*S`, then a real scheduler and W worker processes on loopback with S slots each
(`--parallel S` per worker). Both go through the real runner and grader (workspace, git
baseline, sandbox, capture, one command check), so the figures are what a user gets.

Prints wall times, the ideal (ceil(N / slots) x 2 s), the overhead per trial in slot-seconds
((wall x slots / N) - 2 s: what each trial costs on top of its agent) and, for Dask, where the
time went: executor work on the worker around the trial process (unpacking, spawning,
packing), the trial process beyond its agent (runner + grader), and the time from a task's end
on its worker to its run installed in the client's run tree (transfer, install). Run with `nox -s perf-dask` or directly:
`python benchmarks/bench_dask.py --trials 400 --workers 2 --slots 16`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from compiler.contract import AgentSpec, Cell, CheckSpec, Job, Limits, Options, ScenarioJob, job_id  # noqa: E402
from harness.artifacts.records import read_run  # noqa: E402
from harness.artifacts.run_tree import find_runs  # noqa: E402
from harness.batch import plan  # noqa: E402
from harness.batch.executor.dask import DaskExecutor, DaskSettings  # noqa: E402
from harness.batch.executor.local import LocalExecutor  # noqa: E402
from harness.batch.executor.task import TrialOutcome  # noqa: E402

AGENT_S = 2.0


def _project(root: Path) -> Path:
    project = root / "project"
    seed = project / "scenarios" / "sleep" / "seed"
    seed.mkdir(parents=True)
    (seed / "main.py").write_text("print('hello')\n")
    return project


def _jobs(n: int) -> list[Job]:
    cell = Cell(
        name="none/none/off", levels={"tool": "none", "knowledge": "none", "network": "off"}, control=True
    )
    agent = AgentSpec(id="sleeper", adapter="command", command=f"sleep {AGENT_S:g}")
    scenario = ScenarioJob(
        id="sleep",
        root="scenarios/sleep",
        family="bench",
        seed="scenarios/sleep/seed",
        entry=("main.py",),
        prompt="Wait.\n",
        checks=(CheckSpec(id="runs", kind="command", params={"run": "true"}),),
    )
    return [
        Job(
            id=job_id("bench", cell.name, agent.id, scenario.id, t),
            hash="bench",
            matrix="bench",
            trial=t,
            scenario=scenario,
            cell=cell,
            agent=agent,
            limits=Limits(timeout_s=60),
            options=Options(isolation="none", infra_retries=0),
        )
        for t in range(1, n + 1)
    ]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    return env


def _spawn(argv: list[str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as sink:
        return subprocess.Popen(
            argv, env=_env(), stdout=sink, stderr=subprocess.STDOUT, start_new_session=True
        )


def _wait_for(ready: object, what: str, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not ready():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise SystemExit(f"perf-dask: {what} not ready after {seconds:g} s")
        time.sleep(0.05)


def _run_local(jobs: list[Job], project: Path, runs: Path, slots: int) -> float:
    tasks = plan(jobs, project=project, runs_root=runs, seed=0, concurrent=True).tasks
    start = time.monotonic()
    LocalExecutor().run(
        tasks, parallel=slots, on_outcome=_tick(len(tasks), "local"), cancel=threading.Event()
    )
    return time.monotonic() - start


def _tick(total: int, label: str) -> object:
    done = [0]

    def on_outcome(outcome: TrialOutcome) -> None:
        done[0] += 1
        if done[0] % 50 == 0 or done[0] == total:
            print(f"  {label}: {done[0]}/{total}", file=sys.stderr, flush=True)

    return on_outcome


def _run_dask(
    jobs: list[Job], project: Path, runs: Path, base: Path, workers: int, slots: int
) -> dict[str, float]:
    base.mkdir(parents=True, exist_ok=True)
    sched_file = base / "scheduler.json"
    started = time.monotonic()
    procs = [
        _spawn(
            [
                sys.executable,
                "-m",
                "dask",
                "scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--no-dashboard",
                "--scheduler-file",
                str(sched_file),
            ],
            base / "scheduler.log",
        )
    ]
    try:
        _wait_for(sched_file.is_file, "scheduler")
        for index in range(workers):
            log = base / f"worker-{index}.log"
            procs.append(
                _spawn(
                    [
                        sys.executable,
                        "-m",
                        "dask",
                        "worker",
                        "--scheduler-file",
                        str(sched_file),
                        "--nthreads",
                        str(slots),
                        "--no-nanny",
                        "--no-dashboard",
                        "--local-directory",
                        str(base / f"worker-{index}"),
                    ],
                    log,
                )
            )
            _wait_for(lambda log=log: b"Registered to" in log.read_bytes(), f"worker {index}")
        ready = time.monotonic() - started
        tasks = plan(jobs, project=project, runs_root=runs, seed=0, concurrent=True).tasks
        executor = DaskExecutor(DaskSettings(scheduler_file=str(sched_file)))
        start = time.monotonic()
        executor.run(tasks, parallel=slots, on_outcome=_tick(len(tasks), "dask"), cancel=threading.Event())
        wall = time.monotonic() - start
    finally:
        for proc in [*procs[1:], procs[0]]:  # workers first: stopping both at once can hang a worker
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    stats = executor.stats
    around = [r.ended - r.started - r.trial_s for r in stats.results.values()]
    returned = [stats.received[k] - r.ended for k, r in stats.results.items()]
    agent = {read_run(p).job_id: read_run(p).metrics.duration_s or 0.0 for p in find_runs(runs)}
    in_trial = [r.trial_s - agent.get(k, AGENT_S) for k, r in stats.results.items()]
    sizes = [len(r.archive or b"") for r in stats.results.values()]
    return {
        "cluster_ready_s": ready,
        "wall_s": wall,
        "worker_executor_median_s": statistics.median(around),
        "trial_process_beyond_agent_median_s": statistics.median(in_trial),
        "result_to_installed_median_s": statistics.median(returned),
        "archive_kib_mean": statistics.mean(sizes) / 1024,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=400)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--slots", type=int, default=16, help="trials at once per worker")
    parser.add_argument("--skip-local", action="store_true")
    args = parser.parse_args()
    total = args.workers * args.slots
    jobs = _jobs(args.trials)
    base = Path(tempfile.mkdtemp(prefix="bench-dask-"))
    try:
        project = _project(base)
        ideal = math.ceil(args.trials / total) * AGENT_S
        figures: dict[str, float] = {"trials": args.trials, "slots": total, "ideal_wall_s": ideal}
        if not args.skip_local:
            local = _run_local(jobs, project, base / "runs-local", total)
            figures["local_wall_s"] = local
            figures["local_overhead_per_trial_slot_s"] = local * total / args.trials - AGENT_S
        dask = _run_dask(jobs, project, base / "runs-dask", base / "cluster", args.workers, args.slots)
        figures.update({f"dask_{k}": v for k, v in dask.items()})
        figures["dask_overhead_per_trial_slot_s"] = dask["wall_s"] * total / args.trials - AGENT_S
        assert len(find_runs(base / "runs-dask")) == args.trials, "every trial came back"
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(
        f"perf-dask: {args.trials} trials of a {AGENT_S:g} s agent, {args.workers} workers x {args.slots} slots "
        f"vs the local pool with --parallel {total} ({os.cpu_count()} cores)"
    )
    for key, value in figures.items():
        print(f"  {key:40s} {value:10.3f}" if isinstance(value, float) else f"  {key:40s} {value:10d}")
    print(json.dumps({k: round(v, 4) for k, v in figures.items()}, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
