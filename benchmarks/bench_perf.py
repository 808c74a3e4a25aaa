"""assay's own speed, from one run: trivial trials side by side with Inspect AI, the per-trial
overhead by stage, grading throughput, and the README's demo and test command on fresh clones.

1. Side by side: 200 trivial trials -- the noop agent, one `contains` check, the example
   project's control cell (none/none/off) with its canaries -- as `assay matrix` from start to
   the last grade, parallel 4; then Inspect AI's 200 local-sandbox samples (one exec and a
   mock model each), `inspect eval` from start to end, 4 at once and all at once; in turns,
   `--rounds` times. Prints each and the ratio of the medians (against Inspect's faster setting);
   for reference, also assay on the same trials without a sandbox (`isolation: none`), which
   tells what the sandbox costs from what the rest of the harness does. Then both on one trial /
   one sample, which splits each wall time into its start-up and its cost per further trial.
   Beside every wall time, the CPU time the whole machine spent meanwhile (/proc/stat, every
   process and kernel thread) and the time the hypervisor stole; the CPU split the same way: the cost
   of a trial, which the wall time shows only as far as the cores are busy.
2. Overhead: the same trial run serially in this process (isolation auto), run and grade;
   the median per trial and its breakdown by stage (run.json `timings_s`, the record, the grade).
3. Grading throughput: the example suite's runs graded by 2 workers (benchmarks/bench_grade.py).
4. The README's demo line and its test command, each on a fresh clone of HEAD, installs
   included (the package caches are warm after the first); then, on the test line's clone, how
   soon a second nox session (`validate`) starts its work.

The load average is printed beside each figure: the machine may be shared.

    python benchmarks/bench_perf.py --inspect .nox/env-inspect/bin/python [--trials 200]
        [--parallel 4] [--rounds 3] [--skip-demo] [--skip-tests] [--skip-grade]
"""

from __future__ import annotations

import argparse
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_runner import inspect_wall  # noqa: E402
from machine import Cost, load, measured  # noqa: E402

from compiler.contract import iter_jobs  # noqa: E402
from harness.artifacts.records import read_run  # noqa: E402
from harness.grade import grade_run  # noqa: E402
from harness.trial import run_trial  # noqa: E402

MATRIX = """\
kind: matrix
id: perf
agents: [noop]
factors: {{ tool: [none], knowledge: [none], network: [off] }}
scenarios: [perf-trivial]
trials: {trials}
parallel: 4
seed: 1
default: true
"""
BARE = """\
kind: matrix
id: perf-bare
agents: [noop]
factors: {{ tool: [none], knowledge: [none], network: [off] }}
scenarios: [perf-trivial]
trials: {trials}
parallel: 4
options: {{ isolation: none }}
seed: 1
"""
"""The same trials without a sandbox: a reference line, to tell the sandbox's cost from the rest."""
SCENARIO = """\
kind: scenario
id: perf-trivial
family: perf
split: test
entry: app/main.py
writable: ["app/**"]
prompt: prompt.md
checks:
  - { id: keeps-main, kind: contains, file: app/main.py, text: ["def main("] }
"""


def trivial_project(dest: Path, trials: int) -> Path:
    """The example project's factors and control cell, one trivial scenario, a matrix of it."""
    for folder in ("tools", "guides", "wiki"):
        shutil.copytree(ROOT / folder, dest / folder, symlinks=True)
    (dest / "specs" / "agents").mkdir(parents=True)
    (dest / "specs" / "matrices").mkdir()
    for rel in ("specs/project.yaml", "specs/prices.yaml", "specs/agents/noop.yaml"):
        shutil.copy(ROOT / rel, dest / rel)
    (dest / "specs" / "matrices" / "perf.yaml").write_text(MATRIX.format(trials=trials))
    (dest / "specs" / "matrices" / "perf-bare.yaml").write_text(BARE.format(trials=trials))
    scenario = dest / "scenarios" / "perf-trivial"
    (scenario / "seed" / "app").mkdir(parents=True)
    (scenario / "scenario.yaml").write_text(SCENARIO)
    (scenario / "prompt.md").write_text("Leave everything as it is.\n")
    (scenario / "seed" / "app" / "main.py").write_text("def main() -> int:\n    return 0\n")
    (scenario / "reference" / "app").mkdir(parents=True)
    (scenario / "reference" / "app" / "main.py").write_text("def main() -> int:\n    return 1\n")
    assay(dest, "compile")
    return dest


def assay(project: Path, *args: str) -> float:
    """Seconds `python -m harness --project P args...` took; raises when it fails."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "harness", "--project", str(project), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"assay {' '.join(args)} exited {done.returncode}:\n{done.stderr[-3000:]}")
    return wall


def _said(cost: Cost, n: int, unit: str) -> str:
    return (
        f"{cost.wall:.1f} s ({1000 * cost.wall / n:.0f} ms/{unit}); CPU, whole machine, "
        f"{cost.cpu:.1f} s ({1000 * cost.cpu / n:.0f} ms/{unit}), stolen {cost.steal:.1f} s"
    )


def side_by_side(project: Path, args: argparse.Namespace, scratch: Path) -> None:
    """assay and Inspect AI in turns (`--rounds`): a change of load hits both alike; the ratio of the
    medians, against Inspect's faster setting (as many at once as assay, or all at once). Beside
    each wall time, the CPU time the whole machine spent meanwhile: what each trial costs, which the
    wall time shows only as far as there are cores to spare."""
    ours: list[Cost] = []
    bare: list[Cost] = []
    theirs: dict[int, list[Cost]] = {}
    ours_one: list[Cost] = []
    theirs_one: list[Cost] = []
    n = args.trials
    for round_ in range(1, args.rounds + 1):
        before = load()
        runs = scratch / f"runs-{round_}"
        matrix = ("matrix", "perf", "--parallel", str(args.parallel), "--runs", str(runs))
        ours.append(measured(assay, project, *matrix))
        print(
            f"assay: {n} trivial trials (noop, 1 contains check, control cell + canaries), "
            f"assay matrix --parallel {args.parallel}, start to last grade: {_said(ours[-1], n, 'trial')}; "
            f"{before}"
        )
        before = load()
        bare_matrix = ("matrix", "perf-bare", "--parallel", str(args.parallel), "--runs", str(runs))
        bare.append(measured(assay, project, *bare_matrix))
        print(
            f"  reference: the same trials without a sandbox (isolation none): {_said(bare[-1], n, 'trial')}; "
            f"{before}"
        )
        if not args.inspect:
            print("Inspect AI: not measured (--inspect PY)")
            return
        for width in dict.fromkeys((args.parallel, n)):  # as assay, and all at once
            before = load()
            cost = measured(inspect_wall, args.inspect, n, ["true"], scratch, parallel=width)
            theirs.setdefault(width, []).append(cost)
            print(
                f"Inspect AI: {n} local-sandbox samples (one exec, mock model), inspect eval, "
                f"{width} at once: {_said(cost, n, 'sample')}; {before}"
            )
        # The same commands on one trial / one sample: what each costs before its first trial.
        one = ("matrix", "perf", "--trials", "1", "--runs", str(scratch / f"one-{round_}"))
        ours_one.append(measured(assay, project, *one))
        theirs_one.append(
            measured(inspect_wall, args.inspect, n, ["true"], scratch, parallel=args.parallel, limit=1)
        )
        print(
            f"  one trial / one sample, start to end: assay {ours_one[-1].wall:.1f} s "
            f"(CPU {ours_one[-1].cpu:.1f} s), Inspect AI {theirs_one[-1].wall:.1f} s (CPU {theirs_one[-1].cpu:.1f} s)"
        )

    def median(costs: list[Cost], field: str = "wall") -> float:
        return statistics.median(getattr(c, field) for c in costs)

    best = min(median(v) for v in theirs.values())
    # each round's own ratio too: on a shared machine the load can change more between rounds than within one
    paired = [c.wall / min(w[i].wall for w in theirs.values()) for i, c in enumerate(ours)]
    print(
        f"ratio assay/Inspect, medians of {args.rounds} round(s), Inspect's faster setting: "
        f"{median(ours) / best:.2f} (goal <= 0.5); "
        f"by round: {', '.join(f'{r:.2f}' for r in paired)}; without a sandbox (reference) "
        f"{median(bare) / best:.2f}"
    )
    if n < 2:
        return
    same = theirs[args.parallel]
    split = {
        measure: [
            (median(whole, measure) - median(start, measure)) / (n - 1)
            for whole, start in ((ours, ours_one), (same, theirs_one))
        ]
        for measure in ("wall", "cpu")
    }
    noise = {
        measure: " (a negative cost: the difference is within the start-up's variation; use more --rounds)"
        if min(costs) < 0
        else ""
        for measure, costs in split.items()
    }
    print(
        f"  split, medians: start-up (one trial / one sample) assay {median(ours_one):.1f} s, Inspect AI "
        f"{median(theirs_one):.1f} s; each further trial at --parallel {args.parallel}: "
        f"assay {1000 * split['wall'][0]:.1f} ms, Inspect AI {1000 * split['wall'][1]:.1f} ms{noise['wall']}"
    )
    print(
        f"  CPU, whole machine, medians: start-up assay {median(ours_one, 'cpu'):.1f} s, Inspect AI "
        f"{median(theirs_one, 'cpu'):.1f} s; each further trial assay {1000 * split['cpu'][0]:.1f} ms, "
        f"Inspect AI {1000 * split['cpu'][1]:.1f} ms{noise['cpu']}; without a sandbox, assay "
        f"{1000 * median(bare, 'cpu') / n:.1f} ms/trial all in (on {os.cpu_count()} cores the wall time "
        f"cannot fall below CPU time / {os.cpu_count()})"
    )


def overhead(project: Path, n: int, scratch: Path) -> None:
    job = next(iter(iter_jobs(project / "generated", matrix="perf")))
    stages: dict[str, list[float]] = {}
    totals: list[float] = []
    before = load()
    for i in range(n + 1):
        run_dir = scratch / "overhead" / f"t{i:03d}"
        start = time.perf_counter()
        run_trial(job, project=project, run_dir=run_dir)
        ran = time.perf_counter()
        grade = grade_run(run_dir, project=project)
        end = time.perf_counter()
        record = read_run(run_dir)
        if record.error or record.invalid or not grade.passed:
            raise SystemExit(f"overhead trial {i}: {record.error or record.invalid or grade.checks}")
        if not i:
            continue  # the first trial warms caches (imports, probes)
        timings = dict(record.extra.get("timings_s", {}))
        timings["record"] = (ran - start) - sum(timings.values())
        timings["grade"] = end - ran
        for stage, seconds in timings.items():
            stages.setdefault(stage, []).append(seconds)
        totals.append(end - start)
    parts = ", ".join(f"{k} {1000 * statistics.median(v):.1f}" for k, v in stages.items())
    print(
        f"overhead per trial (noop, control cell + canaries, 1 contains check, isolation {record.isolation}), "
        f"run + grade, serial: median {1000 * statistics.median(totals):.0f} ms (goal <= 40), "
        f"p95 {1000 * sorted(totals)[math.ceil(0.95 * len(totals)) - 1]:.0f} ms over {n} ({before})"
    )
    print(f"  by stage, median ms: {parts}")


def grading(parallel: int) -> None:
    before = load()
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "bench_grade.py"),
            "--parallel",
            str(parallel),
            "--runs",
            "30",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"bench_grade failed:\n{done.stderr[-3000:]}")
    rate = re.search(rf"parallel {parallel}:.*?([\d.]+) runs/s", done.stdout)
    serial = re.search(r"serial:.*?([\d.]+) runs/s", done.stdout)
    print(
        f"grading the example suite: {rate.group(1) if rate else '?'} runs/s with {parallel} workers "
        f"(goal >= 5), {serial.group(1) if serial else '?'} serial ({before})"
    )


def readme_line(session: str) -> str:
    """The README's quickstart line that ends in `nox -s <session>`."""
    for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines():
        command = line.split("#", 1)[0].strip()
        if command.endswith(f"nox -s {session}"):
            return command
    raise SystemExit(f"README.md has no line ending in `nox -s {session}`")


def fresh_clone(session: str, scratch: Path, goal_s: float) -> None:
    """The README's line for `session`, timed on a fresh clone of HEAD (installs included)."""
    command = readme_line(session)
    clone = scratch / f"clone-{session}"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    own = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p != own)
    before = load()
    start = time.perf_counter()
    done = subprocess.run(["sh", "-c", command], cwd=clone, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    status = "ok" if done.returncode == 0 else f"FAILED (exit {done.returncode})"
    print(f"README `{command}` on a fresh clone: {wall:.0f} s (goal <= {goal_s:.0f}), {status} ({before})")
    if done.returncode != 0:
        print(done.stdout[-2000:] + done.stderr[-2000:])


def second_session(scratch: Path, session: str, goal_s: float) -> None:
    """On the clone the README's test line made: how long `nox -s <session>` takes to start its work
    (its first command, once its environment is there), and in all."""
    clone = scratch / "clone-tests"
    if not (clone / ".venv" / "bin" / "nox").exists():
        print("second nox session: not measured (no clone with nox from the test line)")
        return
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    before = load()
    start = time.perf_counter()
    proc = subprocess.Popen(
        [str(clone / ".venv" / "bin" / "nox"), "-s", session],
        cwd=clone,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    first: float | None = None
    assert proc.stderr is not None
    for line in proc.stderr:  # nox echoes each command it runs: `nox > /path/python -m harness ...`
        if first is None and re.match(r"nox > \S*python\S* ", line):
            first = time.perf_counter() - start
    proc.wait()
    total = time.perf_counter() - start
    shown = f"{first:.1f} s" if first is not None else "never"
    print(
        f"second nox session on that clone, `nox -s {session}`: its first command after {shown} "
        f"(goal <= {goal_s:.0f}), done in {total:.0f} s, exit {proc.returncode} ({before})"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--parallel", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3, help="assay and Inspect AI in turns, this often")
    parser.add_argument("--overhead-trials", type=int, default=30)
    parser.add_argument("--inspect", default=None, help="python of a venv with inspect-ai")
    parser.add_argument("--skip-demo", action="store_true")
    parser.add_argument("--skip-tests", action="store_true")
    parser.add_argument("--skip-grade", action="store_true")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="assay-bench-perf-"))
    try:
        project = trivial_project(scratch / "project", args.trials)
        side_by_side(project, args, scratch)
        overhead(project, args.overhead_trials, scratch)
        if not args.skip_grade:
            grading(2)
        if not args.skip_demo:
            fresh_clone("demo", scratch, 60)
        if not args.skip_tests:
            fresh_clone("tests", scratch, 120)
            second_session(scratch, "validate", 10)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
