"""Validity benchmark: `assay validate` on the example suite; prints figures.

Per scenario: workspaces built, check runs (every verdict twice) and wall-clock seconds, then
the whole suite with the default parallelism, and the check engine's own overhead per
command (a `true` command through harness.sandbox.proc). Run with `nox -s perf-validate` or directly.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from compiler.contract import CheckSpec  # noqa: E402
from compiler.pipeline import build  # noqa: E402
from harness.checks import CheckContext, run_check  # noqa: E402
from harness.validity import validate  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--project", type=Path, default=REPO)
    parser.add_argument("--jobs", type=int, default=None)
    args = parser.parse_args()
    started = time.perf_counter()
    plan = build(args.project)
    scenarios = [s.job for _, s in sorted(plan.validated.scenarios.items())]
    print(f"compile (in-process): {time.perf_counter() - started:.2f}s, {len(scenarios)} scenarios")
    print(f"{'scenario':<28} {'workspaces':>10} {'check runs':>10} {'seconds':>8}")
    for job in scenarios:
        report = validate([job], args.project, jobs=args.jobs)
        row = report.scenarios[0]
        print(f"{job.id:<28} {row.workspaces:>10} {report.check_runs:>10} {report.duration_s:>8.2f}")
    report = validate(scenarios, args.project, jobs=args.jobs)
    workspaces = sum(s.workspaces for s in report.scenarios)
    print(
        f"whole suite: {workspaces} workspaces, {report.check_runs} check runs in {report.duration_s:.2f}s"
        f" ({'valid' if report.ok else 'INVALID'}; {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f})"
    )
    spec = CheckSpec(id="t", kind="command", params={"run": ["true"]})
    times = []
    for _ in range(30):
        t = time.perf_counter()
        run_check(spec, REPO, CheckContext())
        times.append(time.perf_counter() - t)
    print(f"engine overhead per command check: median {statistics.median(times) * 1000:.1f} ms")
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
