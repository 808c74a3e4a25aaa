"""Grading benchmark: runs graded per second, and where the time goes.

Builds a stored run tree from the example suite (the project at the repository root
when it has specs/ and scenarios/, else a small built-in project): runs of every scenario in
turn (`--scenario ID`: of one), whose workspace is the seed with the reference overlaid (a passing
run) or the bare seed (a failing one), with a trace and two snapshots of the entry. Then:

1. grades the tree serially in this process, timing every check subprocess
   (`harness.checks._proc.run_command`) and batch of them (`harness.sandbox.batch.run_batch`: a
   sandbox launch running a run's check commands in turn; `harness.sandbox.batch_warm.Servers.run`:
   a run's check commands sent to a sandbox kept across runs) to split wall time into check
   processes vs the harness (copying workspaces, reading artifacts, deriving sections, writing
   JSON), and counting the sandboxes the warm servers started;
2. regrades it with `--parallel` graders (default 2, the machine's cores: threads of this process)
   for throughput; each keeps its own grading session (`harness.grade.session`).

    python benchmarks/bench_grade.py [--runs 60] [--parallel 2] [--project PATH] [--scenario ID]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from compiler.contract import Job, iter_jobs  # noqa: E402
from harness.artifacts.records import RunRecord  # noqa: E402
from harness.artifacts.store import write_record  # noqa: E402
from harness.checks import _proc  # noqa: E402
from harness.grade import grade_tree  # noqa: E402
from harness.sandbox import batch, batch_warm  # noqa: E402


def _project(arg: str | None, scratch: Path) -> Path:
    if arg:
        return Path(arg).resolve()
    if (ROOT / "specs" / "project.yaml").is_file() and any((ROOT / "scenarios").glob("*/scenario.*")):
        return ROOT
    sys.path.insert(0, str(ROOT))
    from tests.grade.project import write_project

    return write_project(scratch / "project", marker=scratch / "agent-started")


def _compile(project: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "harness", "--project", str(project), "compile"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"assay compile failed:\n{done.stderr}")


def _overlay(src: Path, dst: Path) -> None:
    if src.is_dir():
        shutil.copytree(src, dst, dirs_exist_ok=True)


def _make_run(run_dir: Path, job: Job, project: Path, passing: bool) -> None:
    ws = run_dir / "workspace"
    _overlay(project / job.scenario.seed, ws)
    ws.mkdir(parents=True, exist_ok=True)
    if passing and job.scenario.reference:
        _overlay(project / job.scenario.reference, ws)
    (run_dir / "state").mkdir()
    (run_dir / "job.json").write_text(job.model_dump_json(indent=2))
    t0 = time.time() - 60
    calls = [["tool", "--help"], ["tool", "check", "."], ["tool", "check", "."]]
    with (run_dir / "trace.jsonl").open("w") as fh:
        for n, argv in enumerate(calls):
            fh.write(
                json.dumps(
                    {
                        "t": t0 + n,
                        "tool": "tool",
                        "argv": argv,
                        "exit": n % 2,
                        "duration_s": 0.1,
                        "output_bytes": 400,
                    }
                )
                + "\n"
            )
    snaps = run_dir / "snapshots"
    snaps.mkdir()
    rows = []
    for n, rel in enumerate(job.scenario.entry[:1] * 2, 1):
        source = ws / rel if n == 2 else project / job.scenario.seed / rel
        if source.is_file():
            name = f"{n:03d}-{rel.replace('/', '__')}"
            shutil.copyfile(source, snaps / name)
            rows.append({"t": t0 + 10 * n, "index": n, "file": rel, "snapshot": name})
    (snaps / "index.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (run_dir / "usage.jsonl").write_text(
        "".join(
            json.dumps(
                {"t": t0 + n, "input": 1000, "output": 100, "context": 1100 * n, "context_limit": 200000}
            )
            + "\n"
            for n in range(1, 6)
        )
    )
    write_record(
        run_dir / "run.json",
        RunRecord(
            job_id=job.id,
            job_hash=job.hash,
            matrix=job.matrix,
            scenario=job.scenario.id,
            cell=job.cell.name,
            levels=job.cell.levels,
            agent=job.agent.id,
            trial=job.trial,
            started_at=t0,
            ended_at=t0 + 60,
            exit_code=0,
            model=job.agent.model,
        ),
    )


def _build(project: Path, runs: Path, count: int, only: str | None = None) -> int:
    """`count` runs taking the scenarios in turn (each scenario's first job), passing and failing in
    turn per scenario; `only` grades one scenario (as this bench did before it took them all)."""
    jobs = list(iter_jobs(project / "generated"))
    if not jobs:
        raise SystemExit("the project compiled no job")
    first: dict[str, Job] = {}
    for job in jobs:
        first.setdefault(job.scenario.id, job)
    chosen = [first[only]] if only else [first[k] for k in sorted(first)]
    for n in range(count):
        job = chosen[n % len(chosen)]
        _make_run(runs / f"run-{n:04d}", job, project, passing=(n // len(chosen)) % 2 == 0)
    return len(chosen)


def _timed(fn: Callable[..., Any], box: list[float]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            box[0] += time.perf_counter() - start

    return wrapper


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--project", default=None)
    parser.add_argument("--scenario", default=None, help="grade only this scenario's runs")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="assay-bench-grade-"))
    try:
        project = _project(args.project, scratch)
        _compile(project)
        runs = scratch / "runs"
        scenarios = _build(project, runs, args.runs, args.scenario)

        load_start = os.getloadavg()[0]
        in_subprocess = [0.0]
        real, real_batch, real_warm = _proc.run_command, batch.run_batch, batch_warm.Servers.run
        real_start = batch_warm._Server.start
        launches = [0]

        def counted(*args: Any, **kwargs: Any) -> Any:
            launches[0] += 1
            return real_start(*args, **kwargs)

        _proc.run_command = _timed(real, in_subprocess)
        batch.run_batch = _timed(real_batch, in_subprocess)
        batch_warm.Servers.run = _timed(real_warm, in_subprocess)  # type: ignore[method-assign]
        batch_warm._Server.start = counted  # type: ignore[method-assign]
        start = time.perf_counter()
        serial = grade_tree(runs, project=project, regrade=True)
        serial_s = time.perf_counter() - start
        _proc.run_command, batch.run_batch = real, real_batch
        batch_warm.Servers.run, batch_warm._Server.start = real_warm, real_start  # type: ignore[method-assign]

        start = time.perf_counter()
        grade_tree(runs, project=project, regrade=True, parallel=args.parallel)
        parallel_s = time.perf_counter() - start

        passed = sum(1 for e in serial if e.grade.passed)
        checks = sum(len(e.grade.checks) for e in serial)
        share = in_subprocess[0] / serial_s if serial_s else 0.0
        print(
            f"project: {project} ({scenarios} scenario(s)); {len(serial)} runs, {checks} checks, {passed} passed"
        )
        print(
            f"serial:     {serial_s:7.2f} s  {len(serial) / serial_s:7.1f} runs/s  {1000 * serial_s / len(serial):6.1f} ms/run"
        )
        print(f"parallel {args.parallel}: {parallel_s:7.2f} s  {len(serial) / parallel_s:7.1f} runs/s")
        by_check: dict[str, float] = {}
        for e in serial:
            for c in e.grade.checks:
                by_check[f"{c.kind}:{c.id}"] = by_check.get(f"{c.kind}:{c.id}", 0.0) + c.duration_s
        top = sorted(by_check.items(), key=lambda kv: -kv[1])[:5]
        print("slowest checks (total s): " + ", ".join(f"{k} {v:.1f}" for k, v in top))
        print(
            f"load average: {load_start:.1f} at the start, {os.getloadavg()[0]:.1f} at the end, on {os.cpu_count()} cores"
        )
        print(
            f"time in check processes: {share:5.1%}  harness: {1 - share:5.1%}  "
            f"({in_subprocess[0]:.2f} s of {serial_s:.2f} s); "
            f"{launches[0]} sandbox(es) kept across the serial pass's runs"
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
