"""Benchmark: `assay report` over a synthetic tree of graded runs; prints time and peak memory.

    python benchmarks/bench_report.py [--runs 100000] [--tree DIR] [--formats md,json,html,junit]

The tree is generated once (run.json + grade.json per run, written through the contract models'
JSON) and reused while its marker matches; the report then runs in a fresh subprocess so its peak
RSS is its own. Targets (issue 5): 100,000 runs in under 20 s, peak memory under 1 GB.
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--tree", type=Path, default=REPO / "build" / "bench-report")
    parser.add_argument("--formats", default="md,json,html,junit")
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
    usage0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "report", str(tree), "--format", args.formats, "--out", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    elapsed = time.perf_counter() - t0
    usage1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    peak_mb = usage1.ru_maxrss / 1024.0  # the largest child: the report or one of its workers
    cpu = (usage1.ru_utime - usage0.ru_utime) + (usage1.ru_stime - usage0.ru_stime)
    if proc.returncode != 0:
        print(proc.stdout + proc.stderr)
        return proc.returncode
    sizes = ", ".join(f"{p.name} {p.stat().st_size / 1e6:.1f} MB" for p in sorted(out.iterdir()))
    print(
        f"report over {args.runs:,} graded runs: {elapsed:.2f} s wall, {cpu:.2f} s CPU (all processes), "
        f"peak RSS {peak_mb:.0f} MB, load average before {load:.1f} on {os.cpu_count()} cores"
    )
    print(f"  outputs: {sizes}")
    ok = elapsed < TARGET_S and peak_mb < TARGET_MB
    print(f"targets: < {TARGET_S:.0f} s and < {TARGET_MB:.0f} MB: {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
