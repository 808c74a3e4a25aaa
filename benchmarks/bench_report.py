"""Benchmark: `assay report` over a synthetic tree of graded runs; prints time and peak memory.

    python benchmarks/bench_report.py [--runs 100000] [--tree DIR] [--formats md,json,html,junit]
                                      [--before CHECKOUT] [--no-cold]

The tree is generated once (run.json + grade.json per run, written through the contract models'
JSON) and reused while its marker matches; every report runs in a fresh subprocess so its peak
RSS is its own. Measured, in order: the first report (it builds the results index,
`.assay-index.sqlite`, and caches each run's facts and each block's aggregate), the report again with a
warm page cache, and with a cold one (`echo 3 > /proc/sys/vm/drop_caches`: root only, else said and
skipped), after one run's grade.json is rewritten (its block of 1,000 runs aggregated again), then the
index's own share cold and warm (sync with the tree + the aggregate of every block, read from the index).
`--before /work/main` runs another checkout's `assay report` on the same tree first (warm, cold).
Targets: 100,000 runs in under 20 s and 1 GB (issue 5); the report in 3 s or less cold (issue 16).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harness.artifacts.grade_sections import (  # noqa: E402
    ExpectationOutcome,
    Friction,
    Snapshots,
    SubcommandUse,
    ToolUse,
    Usage,
)
from harness.artifacts.records import CheckOutcome, Grade, RunnerMetrics, RunRecord, RunStatus  # noqa: E402

CELLS = ("none/none/off", "bin/none/off", "bin/wiki/off", "bin+skill/none/off", "bin+skill/wiki/on")
AGENTS = ("claude-code", "codex")
MARKER = "runs={runs} grades=typed-sections-v1"
TARGET_S = 20.0
TARGET_MB = 1024.0
TARGET_COLD_S = 3.0
"""Issue 16: the whole report over 100,000 runs, all four formats, with a cold page cache."""
DROP_CACHES = Path("/proc/sys/vm/drop_caches")
INDEX_SHARE = """
import sys, time
from pathlib import Path
from harness.artifacts.index import open_index
from harness.report import cached
from harness.report.aggregate import CACHED, Aggregator
from harness.report.indexed import opened
t0 = time.perf_counter()
idx, stats = open_index(Path(sys.argv[1])); idx.close()
t1 = time.perf_counter()
with opened(Path(sys.argv[1])) as listing:
    n = sum(cached.aggregate(listing, Aggregator, CACHED).runs.counts.values())
t2 = time.perf_counter()
print(f"{t1 - t0:.2f} {t2 - t1:.2f} {n}")
"""
"""The index's share of a report: sync, then every run folded into the aggregate (its block's cached
aggregate where the index holds one, else its cached facts)."""


def shape(runs: int) -> tuple[int, int]:
    """(scenarios, trials) so that scenarios x cells x agents x trials == runs (100 scenarios when it divides)."""
    per_trial = len(CELLS) * len(AGENTS)
    scenarios = 100 if runs % (100 * per_trial) == 0 else 1
    return scenarios, max(1, runs // (scenarios * per_trial))


def generate(tree: Path, runs: int) -> float:
    """Write the synthetic tree; returns seconds spent."""
    t0 = time.perf_counter()
    rng = random.Random(5)
    scenarios, trials = shape(runs)
    for s in range(scenarios):
        scenario = f"scenario-{s:03d}"
        difficulty = rng.random()
        for agent in AGENTS:
            for ci, cell in enumerate(CELLS):
                tool, knowledge, network = cell.split("/")
                p = min(0.98, max(0.02, 1.0 - difficulty + 0.08 * ci))
                for trial in range(1, trials + 1):
                    run_dir = tree / scenario / agent / tool / knowledge / network / f"trial-{trial:03d}"
                    run_dir.mkdir(parents=True)
                    passed = rng.random() < p
                    tokens_in, tokens_out = rng.randint(20_000, 90_000), rng.randint(1_000, 9_000)
                    run = RunRecord(
                        job_id=f"bench/{cell}/{agent}/{scenario}/t{trial:02d}",
                        job_hash="0" * 16,
                        matrix="bench",
                        scenario=scenario,
                        cell=cell,
                        levels={"tool": tool, "knowledge": knowledge, "network": network},
                        control=ci == 0,
                        agent=agent,
                        trial=trial,
                        exit_code=0,
                        started_at=0.0,
                        ended_at=60.0,
                        metrics=RunnerMetrics(
                            turns=rng.randint(3, 40),
                            input_tokens=tokens_in,
                            output_tokens=tokens_out,
                            cache_read_tokens=tokens_in // 2,
                            cost_usd=tokens_in * 3e-6 + tokens_out * 15e-6,
                            peak_context=rng.randint(10_000, 150_000),
                            context_limit=200_000,
                            duration_s=rng.uniform(20, 300),
                        ),
                    )
                    checks = rng.randint(0, 5), rng.randint(0, 3)
                    grade = Grade(
                        status=RunStatus.GRADED,
                        passed=passed,
                        usable=passed and rng.random() < 0.95,
                        checks=(
                            CheckOutcome(
                                id="tests",
                                kind="command",
                                layer="agent",
                                outcome="pass" if passed else "fail",
                            ),
                            CheckOutcome(id="compiles", kind="command", layer="agent", outcome="pass"),
                        ),
                        failed_layers=() if passed else ("agent",),
                        grader_hash="g" * 16,
                        graded_at=61.0,
                        metrics={"tool_calls": float(rng.randint(0, 30))},
                        tool_use=ToolUse(
                            present=ci > 0,
                            invocations=sum(checks),
                            by_subcommand={
                                "mytool check": SubcommandUse(
                                    invocations=checks[0], output_bytes=400 * checks[0]
                                ),
                                "mytool lint": SubcommandUse(
                                    invocations=checks[1], output_bytes=90 * checks[1]
                                ),
                            },
                        ),
                        friction=Friction(usage_errors=rng.randint(0, 2), help_lookups=rng.randint(0, 2)),
                        expectations=(
                            ExpectationOutcome(id="E01", outcome="pass" if passed else "fail"),
                            ExpectationOutcome(id="E05", outcome="unavailable"),
                        ),
                        usage=Usage(
                            present=True,
                            turns=rng.randint(3, 40),
                            input=tokens_in,
                            output=tokens_out,
                            total=tokens_in + tokens_out,
                            peak_context=rng.randint(10_000, 150_000),
                        ),
                        snapshots=Snapshots(count=3, first_valid=1, final_valid=passed),
                    )
                    (run_dir / "run.json").write_text(
                        json.dumps(run.model_dump(mode="json"), indent=2, sort_keys=True)
                    )
                    (run_dir / "grade.json").write_text(
                        json.dumps(grade.model_dump(mode="json"), indent=2, sort_keys=True)
                    )
    (tree / ".bench-marker").write_text(MARKER.format(runs=runs))
    return time.perf_counter() - t0


def regrade_one(tree: Path) -> None:
    """Rewrite the first run's grade.json as a regrade does (write, then rename): the index drops its block."""
    grade = next(tree.glob("*/*/*/*/*/trial-001/grade.json"))
    staged = grade.with_suffix(".tmp")
    staged.write_bytes(grade.read_bytes())
    staged.replace(grade)


def drop_caches() -> bool:
    """Empty the page cache (root only); False when this machine does not let us."""
    try:
        subprocess.run(["sync"], check=True)
        DROP_CACHES.write_text("3\n")
        return True
    except OSError:
        return False


class Timed:
    """One report run: wall seconds, CPU seconds of the subprocess tree, peak RSS."""

    def __init__(self, argv: list[str], cwd: Path) -> None:
        usage0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        self.proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
        self.wall = time.perf_counter() - t0
        usage1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.cpu = (usage1.ru_utime - usage0.ru_utime) + (usage1.ru_stime - usage0.ru_stime)
        self.peak_mb = usage1.ru_maxrss / 1024.0  # the largest child so far
        if self.proc.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} failed:\n{self.proc.stdout}{self.proc.stderr}")

    def line(self, what: str) -> str:
        return f"  {what:<46} {self.wall:7.2f} s wall {self.cpu:7.2f} s CPU  peak RSS {self.peak_mb:5.0f} MB"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--tree", type=Path, default=REPO / "build" / "bench-report")
    parser.add_argument("--formats", default="md,json,html,junit")
    parser.add_argument("--before", type=Path, default=None, help="another checkout to measure first")
    parser.add_argument("--no-cold", action="store_true", help="skip the cold page-cache runs")
    args = parser.parse_args()
    tree: Path = args.tree / f"tree-{args.runs}"
    marker = tree / ".bench-marker"
    if not (marker.exists() and marker.read_text() == MARKER.format(runs=args.runs)):
        if tree.exists():
            subprocess.run(["rm", "-rf", str(tree)], check=True)
        tree.mkdir(parents=True)
        print(f"generating {args.runs:,} runs under {tree} ...", flush=True)
        print(f"  generated in {generate(tree, args.runs):.1f} s", flush=True)
    out = args.tree / "out"
    report = [
        sys.executable,
        "-m",
        "harness",
        "report",
        str(tree),
        "--format",
        args.formats,
        "--out",
        str(out),
    ]
    cold = not args.no_cold and drop_caches()
    print(
        f"report over {args.runs:,} graded runs ({args.formats}); load average {os.getloadavg()[0]:.1f} "
        f"on {os.cpu_count()} cores; cold page cache: {'yes' if cold else 'skipped (--no-cold)' if args.no_cold else 'not possible here (needs root)'}"
    )
    if args.before is not None:
        print(f"before ({args.before}: walks every run directory):")
        if cold:
            drop_caches()
            print(Timed(report, args.before).line("report, cold page cache"), flush=True)
        print(Timed(report, args.before).line("report, warm page cache"), flush=True)
    print("after (through the results index):")
    for suffix in ("", "-wal", "-shm"):
        Path(f"{tree / '.assay-index.sqlite'}{suffix}").unlink(missing_ok=True)
    print(Timed(report, REPO).line("first report (builds the index, caches facts)"), flush=True)
    warm = Timed(report, REPO)
    print(warm.line("report, warm page cache"), flush=True)
    runs: list[Timed] = [warm]
    if cold:
        drop_caches()
        runs.append(Timed(report, REPO))
        print(runs[-1].line("report, cold page cache"), flush=True)
    regrade_one(tree)
    print(Timed(report, REPO).line("one run regraded (its block aggregated again)"), flush=True)
    share = [sys.executable, "-c", INDEX_SHARE, str(tree)]
    index_cold = None
    for label, dropped in (("warm", False), ("cold", True)):
        if dropped and not (cold and drop_caches()):
            continue
        timed = Timed(share, REPO)
        sync_s, read_s, n = timed.proc.stdout.split()
        if dropped:
            index_cold = float(sync_s) + float(read_s)
        print(
            f"  index share, {label}: sync {sync_s} s + aggregate of {n} runs {read_s} s wall, "
            f"{timed.cpu:.2f} s CPU (with the interpreter's start)",
            flush=True,
        )
    sizes = ", ".join(f"{p.name} {p.stat().st_size / 1e6:.1f} MB" for p in sorted(out.iterdir()))
    print(f"  outputs: {sizes}; index {(tree / '.assay-index.sqlite').stat().st_size / 1e6:.0f} MB")
    ok = all(r.wall < TARGET_S and r.peak_mb < TARGET_MB for r in runs)
    print(f"targets: report < {TARGET_S:.0f} s and < {TARGET_MB:.0f} MB: {'met' if ok else 'MISSED'}", end="")
    if cold:
        met = runs[-1].wall <= TARGET_COLD_S
        print(
            f"; report <= {TARGET_COLD_S:.0f} s cold: {'met' if met else 'MISSED'} ({runs[-1].wall:.2f} s wall at "
            f"load {os.getloadavg()[0]:.1f}{'' if index_cold is None else f'; the index share {index_cold:.2f} s'})"
        )
    else:
        print()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
