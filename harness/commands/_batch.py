"""Options and the run loop shared by `assay run` and `assay matrix`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from compiler.contract import Job, RoundsPlan
from harness import batch
from harness.artifacts import lock
from harness.batch import versions
from harness.batch.executor.task import IO_ERROR, io_detail
from harness.batch.rounds import Schedule
from harness.batch.select import from_files, matrix_settings, select
from harness.errors import TreeBusy, TreeUnwritable, UsageError
from harness.sandbox import isolation, scenario


def add_options(parser: argparse.ArgumentParser) -> None:
    """Options common to run and matrix."""
    parser.add_argument("--runs", default=None, help="run tree root (default: <project>/runs)")
    parser.add_argument("--trials", type=_count(1, 100_000), default=None, help="keep trials 1..N only")
    parser.add_argument(
        "--parallel",
        "-j",
        type=_count(0, MAX_PARALLEL),
        default=None,
        help="trials at once (default: the matrix's, else 1); with --executor dask: per worker (default: its threads)",
    )
    parser.add_argument(
        "--executor", default="local", help="executor: local, dask, or pkg.mod:Class (default local)"
    )
    parser.add_argument(
        "--scheduler", default=None, help="--executor dask: scheduler address (tcp://host:8786)"
    )
    parser.add_argument(
        "--scheduler-file", default=None, help="--executor dask: scheduler file of `dask scheduler`"
    )
    parser.add_argument(
        "--resources",
        default=None,
        help="--executor dask: Dask resources every trial takes, e.g. 'GPU=1,mem=4e9'",
    )
    parser.add_argument("--seed", type=int, default=None, help="shuffle seed (default: the matrix's)")
    parser.add_argument("--force", action="store_true", help="rerun finished trials too")
    parser.add_argument(
        "--retry",
        default=",".join(batch.RETRYABLE),
        help="finished runs to run again on resume: a comma list of "
        f"{', '.join(batch.RETRYABLE)}, or none (default: all of them, the infrastructure failures)",
    )
    parser.add_argument(
        "--wait", action="store_true", help="wait for another runner holding the run tree instead of refusing"
    )
    parser.add_argument(
        "--fail-fast", action="store_true", help="stop at the first failed trial (default: the matrix's)"
    )
    parser.add_argument(
        "--until",
        choices=("decided", "planned"),
        default=None,
        help="decided: run in rounds and stop each comparison once its uplift is decided "
        "(default: the matrix's `until`, else planned: every trial)",
    )
    parser.add_argument(
        "--min-uplift",
        type=_fraction,
        default=None,
        help="with --until decided: the smallest uplift that matters (default: the matrix's, else 0)",
    )
    parser.add_argument(
        "--budget-tokens",
        type=_count(1, 10**15),
        default=None,
        help="matrix budget in tokens: no round is scheduled past it (default: the matrix's)",
    )
    parser.add_argument(
        "--budget-usd",
        type=_fraction_or_more,
        default=None,
        help="matrix budget in USD, priced by specs/prices.yaml (default: the matrix's)",
    )
    parser.add_argument("--cell", action="append", default=[], help="only this cell (repeatable)")
    parser.add_argument("--agent", action="append", default=[], help="only this agent (repeatable)")
    parser.add_argument("--scenario", action="append", default=[], help="only this scenario (repeatable)")


MAX_PARALLEL = 512
"""More trials at once than any machine here runs; a larger number is a typo."""


def _count(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: a whole number in [low, high], else a one-line usage error."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} is out of range ({low} to {high})")
        return value

    return parse


def _fraction(text: str) -> float:
    """An argparse type: a number in [0, 1]."""
    value = _number(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{value:g} is out of range (0 to 1)")
    return value


def _fraction_or_more(text: str) -> float:
    """An argparse type: a positive number."""
    value = _number(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{value:g} must be above 0")
    return value


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None


def rounds_plan(args: argparse.Namespace, matrix: RoundsPlan | None) -> RoundsPlan | None:
    """The matrix's rounds plan with the flags over it; None: run every trial at once."""
    base = matrix or RoundsPlan()
    plan = RoundsPlan(
        until=args.until or base.until,
        min_uplift=args.min_uplift if args.min_uplift is not None else base.min_uplift,
        budget_tokens=args.budget_tokens if args.budget_tokens is not None else base.budget_tokens,
        budget_cost_usd=args.budget_usd if args.budget_usd is not None else base.budget_cost_usd,
    )
    if plan.until == "planned" and plan.budget_tokens is None and plan.budget_cost_usd is None:
        return None
    return plan


def _retry(text: str) -> tuple[str, ...]:
    chosen = tuple(t.strip() for t in text.split(",") if t.strip() and t.strip() != "none")
    unknown = sorted(set(chosen) - set(batch.RETRYABLE))
    if unknown:
        raise UsageError(
            f"--retry: unknown outcome(s) {', '.join(unknown)}; choose from {', '.join(batch.RETRYABLE)} or none"
        )
    return chosen


def _executor_options(args: argparse.Namespace) -> dict[str, Any]:
    """Options of the chosen executor (only dask takes any)."""
    if args.executor != "dask":
        if args.scheduler or args.scheduler_file or args.resources:
            raise UsageError("--scheduler, --scheduler-file and --resources need --executor dask")
        return {}
    from harness.batch.executor.requirements import RequirementError, parse_resources

    try:
        resources = parse_resources(args.resources or "")
    except RequirementError as exc:
        raise UsageError(str(exc)) from exc
    return {"scheduler": args.scheduler, "scheduler_file": args.scheduler_file, "resources": resources}


def _check_judges(jobs: list[Job]) -> None:
    """Refuse a misconfigured LLM judge before any trial runs, not at its first grade."""
    configs = {name: cfg for job in jobs for name, cfg in job.scenario.judges.items()}
    if not configs:
        return
    from harness.grade import JudgeConfigError, check_judge_config

    try:
        check_judge_config(configs)
    except JudgeConfigError as exc:
        raise UsageError(f"{exc}; fix the project's `judges:` before running the matrix") from None


def run_jobs(
    jobs: list[Job],
    args: argparse.Namespace,
    *,
    seed: int,
    parallel: int | None = None,
    fail_fast: bool = False,
    rounds: RoundsPlan | None = None,
) -> int:
    """Run the selected jobs; 0 when every trial ran (whatever the agents did), 1 when any errored."""
    project = Path(args.project).resolve()
    _check_judges(jobs)
    options = _executor_options(args)
    if args.executor != "dask" and args.parallel == 0:
        raise UsageError(
            "--parallel 0 means 'each Dask worker's threads'; the local executor needs 1 or more"
        )
    if args.executor == "dask":
        args.parallel = args.parallel or 0  # per worker; 0: as many as each worker has threads
    else:
        args.parallel = args.parallel or parallel or 1
    runs_root = Path(args.runs).resolve() if args.runs else project / "runs"
    retry = _retry(args.retry)
    try:
        with lock.hold(runs_root, wait=args.wait):
            return _run_held(
                jobs,
                args,
                project=project,
                runs_root=runs_root,
                seed=seed,
                retry=retry,
                fail_fast=fail_fast,
                options=options,
                rounds=rounds,
            )
    except lock.TreeBusy as exc:
        raise TreeBusy(str(exc)) from None
    except OSError as exc:
        raise TreeUnwritable(f"{io_detail(exc, runs_root)}; nothing was run") from None


def _run_held(
    jobs: list[Job],
    args: argparse.Namespace,
    *,
    project: Path,
    runs_root: Path,
    seed: int,
    retry: tuple[str, ...],
    fail_fast: bool,
    options: dict[str, Any],
    rounds: RoundsPlan | None = None,
) -> int:
    """The batch (or its rounds), with the run tree held by this process."""
    versions.prepare(project, jobs, runs_root)  # builds compared versions, writes versions.json
    if args.executor != "dask":  # a cluster's workers build environments where they run
        scenario.prepare(((j.scenario, isolation.select(j.options.isolation).name) for j in jobs), project)
    errors = 0

    def run(selected: list[Job]) -> bool:
        nonlocal errors
        counts = _one_batch(
            selected,
            args,
            project=project,
            runs_root=runs_root,
            seed=seed,
            retry=retry,
            fail_fast=fail_fast,
            options=options,
        )
        errors += counts.get("error", 0)
        return not ((args.fail_fast or fail_fast) and (counts.get("error") or counts.get("failed")))

    if rounds is None:
        run(jobs)
        return 1 if errors else 0
    matrices = {j.matrix for j in jobs}
    if len(matrices) != 1:
        raise UsageError(
            f"running in rounds needs the jobs of one matrix; these span {', '.join(sorted(matrices))}"
        )
    from harness.commands._rounds import run_in_rounds

    schedule = Schedule(
        until=rounds.until,
        min_uplift=rounds.min_uplift,
        budget_tokens=rounds.budget_tokens,
        budget_cost_usd=rounds.budget_cost_usd,
    )
    run_in_rounds(jobs, schedule, run=run, root=runs_root / matrices.pop(), project=project, err=sys.stderr)
    return 1 if errors else 0


def _one_batch(
    jobs: list[Job],
    args: argparse.Namespace,
    *,
    project: Path,
    runs_root: Path,
    seed: int,
    retry: tuple[str, ...],
    fail_fast: bool,
    options: dict[str, Any],
) -> dict[str, int]:
    """Plan and execute one batch; the outcome counts."""
    plan = batch.plan(
        jobs,
        project=project,
        runs_root=runs_root,
        seed=seed,
        force=args.force,
        concurrent=args.parallel != 1,
        retry=retry,
    )
    err = sys.stderr
    if plan.skipped:
        batch.say(err, f"assay: {len(plan.skipped)} finished trial(s) skipped")
    if plan.retried:
        batch.say(
            err, f"assay: {len(plan.retried)} trial(s) that failed on the harness's side run again (--retry)"
        )
    if plan.regraded:
        batch.say(err, f"assay: {len(plan.regraded)} finished trial(s) without a grade are graded")
    if not plan.tasks:
        batch.say(err, "assay: nothing to run")
        return {}
    outcomes = batch.execute(
        plan.tasks,
        parallel=args.parallel,
        executor=args.executor,
        fail_fast=args.fail_fast or fail_fast,
        options=options,
    )
    counts = batch.summary(outcomes)
    batch.say(err, "assay: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    io = [o for o in outcomes if o.status == IO_ERROR]
    if io:
        raise TreeUnwritable(
            f"{io[0].detail}; the matrix stopped after {len(outcomes) - len(io)} trial(s); rerun to resume"
        )
    return counts


def select_and_run(args: argparse.Namespace, *, matrix: str | None, job_ids: list[str] | None = None) -> int:
    """`assay run` and `assay matrix`: the jobs the arguments select (from generated/, or job
    files), run with their matrix's seed, parallelism and fail-fast unless the flags say otherwise."""
    project = Path(args.project).resolve()
    if args.job_file:
        selected = from_files(args.job_file)
        if args.trials is not None:
            selected = [j for j in selected if j.trial <= args.trials]
    else:
        selected = select(
            project,
            matrix=matrix,
            job_ids=job_ids or (),
            cells=args.cell,
            agents=args.agent,
            scenarios=args.scenario,
            trials=args.trials,
        )
    names = {j.matrix for j in selected}
    settings = matrix_settings(project, matrix or (names.pop() if len(names) == 1 else None))
    seed = args.seed if args.seed is not None else settings.seed
    return run_jobs(
        selected,
        args,
        seed=seed,
        parallel=settings.parallel,
        fail_fast=settings.fail_fast,
        rounds=rounds_plan(args, settings.rounds),
    )
