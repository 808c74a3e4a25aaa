"""Runner benchmark: harness overhead per trial, and 200 concurrent agents.

1. Overhead: the noop agent on an example scenario's seed, graded with one command check,
   run serially N times (workspace, provisions, canaries, adapter, capture, run.json, grade).
   Prints the median and p95 wall time per trial, with isolation `auto` and `none`.
2. Throughput: 200 trials whose agent is `sleep 5`, all at once (`--parallel 200`). Prints
   the wall time for all 200; the ideal is 5 s, the rest is what the harness costs.
3. Optionally (--inspect VENV_PYTHON): the same 200 trials in Inspect AI (local sandbox,
   mock model, one exec per sample) and the ratio of wall times.

Run from the project root: `nox -s perf-harness` or `python benchmarks/bench_runner.py`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from compiler.contract import AgentSpec, CheckSpec, Job, Limits, iter_jobs  # noqa: E402
from harness.artifacts.run_tree import run_dir_for  # noqa: E402
from harness.batch.executor.task import warm  # noqa: E402
from harness.grade import grade_run  # noqa: E402
from harness.trial import run_trial  # noqa: E402


def _base_job() -> Job:
    if not (ROOT / "generated" / "manifest.json").is_file():
        subprocess.run([sys.executable, "-m", "harness", "compile"], cwd=ROOT, check=True)
    job = next(iter(iter_jobs(ROOT / "generated", matrix="demo", agents=["noop"])))
    check = CheckSpec(id="true", kind="command", params={"run": "true", "result": {"exit": 0}})
    scenario = job.scenario.model_copy(update={"checks": (check,), "expectations": (), "grader": None})
    return job.model_copy(update={"scenario": scenario, "agent": AgentSpec(id="noop", adapter="noop")})


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def overhead(n: int, isolation: str, scratch: Path) -> tuple[float, float]:
    """(median, p95) seconds per noop trial, graded."""
    base = _base_job()
    job = base.model_copy(update={"options": base.options.model_copy(update={"isolation": isolation})})
    times: list[float] = []
    for i in range(n + 1):
        run_dir = scratch / f"overhead-{isolation}" / f"t{i:03d}"
        start = time.perf_counter()
        record = run_trial(job, project=ROOT, run_dir=run_dir)
        grade = grade_run(run_dir)  # the job's own single check, not the project's current ones
        elapsed = time.perf_counter() - start
        if record.error or not grade.passed:
            raise SystemExit(f"overhead trial {i} did not pass: {record.error} {grade}")
        if i:  # the first trial warms caches (imports, probes)
            times.append(elapsed)
    return statistics.median(times), _percentile(times, 0.95)


def concurrent(n: int, seconds: float, scratch: Path, isolation: str) -> float:
    """Wall seconds for n trials of `sleep seconds`, all at once."""
    base = _base_job()
    agent = AgentSpec(id="sleeper", adapter="command", command=f"sleep {seconds}")
    jobs = [
        base.model_copy(
            update={
                "id": f"bench/none/none/off/sleeper/{base.scenario.id}/t{t:03d}",
                "trial": t,
                "agent": agent,
                "limits": Limits(timeout_s=seconds * 20),
                "options": base.options.model_copy(update={"isolation": isolation}),
            }
        )
        for t in range(1, n + 1)
    ]
    scratch_runs = scratch / f"concurrent-{isolation}"

    def one(job: Job) -> bool:
        # What the local executor's per-trial function does, grading the job's own check.
        run_dir = run_dir_for(job, scratch_runs)
        record = run_trial(job, project=ROOT, run_dir=run_dir, concurrent=True)
        return record.error is None and grade_run(run_dir).passed

    warm(isolation)
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=n) as pool:
        results = list(pool.map(one, jobs))
    wall = time.perf_counter() - start
    if not all(results):
        raise SystemExit(f"{results.count(False)} concurrent trial(s) failed")
    return wall


INSPECT_TASK = textwrap.dedent(
    """
    from inspect_ai import Task, task
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import includes
    from inspect_ai.solver import generate, solver
    from inspect_ai.util import sandbox

    @solver
    def one_exec():
        async def solve(state, generate_fn):
            await sandbox().exec({argv!r})
            return await generate_fn(state)
        return solve

    @task
    def bench():
        samples = [Sample(input=f"sample {{i}}", target="x") for i in range({n})]
        return Task(dataset=samples, solver=[one_exec()], scorer=includes(), sandbox="local")
    """
)


def inspect_wall(
    python: str,
    n: int,
    argv: list[str],
    scratch: Path,
    tiktoken_cache: str | None = None,
    *,
    parallel: int | None = None,
    limit: int | None = None,
) -> float:
    """Wall seconds of `inspect eval` over n samples (local sandbox, mock model, one exec of argv each),
    start to end; `parallel` samples at once (default all); `limit`: only the first that many."""
    task = scratch / "inspect_task.py"
    task.write_text(INSPECT_TASK.format(n=n, argv=argv), encoding="utf-8")
    env = {**os.environ, "INSPECT_LOG_DIR": str(scratch / "inspect-logs")}
    if tiktoken_cache:
        env["TIKTOKEN_CACHE_DIR"] = tiktoken_cache
    inspect = str(Path(python).absolute().parent / "inspect")  # absolute: eval runs in scratch
    width = str(parallel or n)
    argv_eval = [inspect, "eval", task.name, "--model", "mockllm/model", "--display", "none"]
    argv_eval += ["--max-samples", width, "--max-sandboxes", width, "--max-subprocesses", width]
    if limit is not None:
        argv_eval += ["--limit", str(limit)]
    start = time.perf_counter()
    done = subprocess.run(argv_eval, cwd=scratch, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"inspect eval failed: {done.stderr[-2000:]}")
    return wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=30, help="serial noop trials for the overhead figure")
    parser.add_argument("--agents", type=int, default=200, help="concurrent sleeping agents")
    parser.add_argument("--sleep", type=float, default=5.0, help="seconds each concurrent agent sleeps")
    parser.add_argument(
        "--isolation", default="auto", help="isolation of the concurrent run (auto, none, ...)"
    )
    parser.add_argument(
        "--inspect", default=None, help="python of a venv with inspect-ai: measure it side by side"
    )
    parser.add_argument(
        "--tiktoken-cache", default=None, help="TIKTOKEN_CACHE_DIR for Inspect's mock model offline"
    )
    parser.add_argument("--skip-overhead", action="store_true")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="assay-bench-runner-"))
    try:
        if not args.skip_overhead:
            for iso in ("auto", "none"):
                med, p95 = overhead(args.trials, iso, scratch)
                print(
                    f"overhead per trial (noop agent, 1 command check, isolation {iso}): "
                    f"median {med * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms over {args.trials} trials"
                )
        wall = concurrent(args.agents, args.sleep, scratch, args.isolation)
        print(
            f"{args.agents} concurrent agents sleeping {args.sleep:g} s (isolation {args.isolation}): "
            f"wall {wall:.1f} s (ideal {args.sleep:g} s; harness {wall - args.sleep:.1f} s)"
        )
        if args.inspect:
            iwall = inspect_wall(
                args.inspect, args.agents, ["sleep", f"{args.sleep:g}"], scratch, args.tiktoken_cache
            )
            print(
                f"Inspect AI, same {args.agents} samples (local sandbox, mock model, one exec each): "
                f"wall {iwall:.1f} s; assay/Inspect = {wall / iwall:.2f}"
            )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
