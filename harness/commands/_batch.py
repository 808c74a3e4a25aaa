"""Options and the run loop shared by `assay run` and `assay matrix`."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from compiler.contract import Job, RoundsPlan
from harness import batch
from harness.artifacts import index, lock
from harness.batch import versions
from harness.batch.executor.task import IO_ERROR
from harness.batch.select import from_files, matrix_settings, select
from harness.commands import _rounds
from harness.commands._generated import refuse_stale
from harness.errors import TreeBusy, TreeUnwritable, UsageError, io_detail
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
    _rounds.add_options(parser)
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


def write_page(outcome: Any) -> None:
    """A finished trial's page (view.html), written where the run landed (local or shipped back):
    by the local pool's worker right after its grade, by a Dask client as each run arrives."""
    from harness.report.viewer import refresh_page

    run_dir = Path(outcome.run_dir)
    if outcome.status not in ("skipped", "interrupted") and (run_dir / "run.json").is_file():
        try:
            refresh_page(run_dir, force=True)
        except Exception as exc:  # a page is derived data: `assay view` rewrites it; the matrix goes on
            batch.say(sys.stderr, f"assay: warning: no page for {run_dir}: {type(exc).__name__}: {exc}")


def _warn_unprotected(jobs: list[Job]) -> None:
    """Say on stderr, before any trial, each sandbox protection that will not hold on this machine
    (run.json `protections` and the report say it per run)."""
    from harness.sandbox.isolation import select
    from harness.sandbox.protections import measure

    for name in sorted({job.options.isolation for job in jobs}):
        held = measure(select(name), neutralised=True)
        for why in held.failed:
            print(f"assay: WARNING: isolation {held.isolation}: {why}", file=sys.stderr)


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
    run = Batch(args, project, runs_root, seed, _retry(args.retry), fail_fast, options)
    try:
        with lock.hold(runs_root, wait=args.wait):
            return _run_held(jobs, run, rounds)
    except lock.TreeBusy as exc:
        raise TreeBusy(str(exc)) from None
    except OSError as exc:
        raise TreeUnwritable(f"{io_detail(exc, runs_root)}; nothing was run") from None


def _run_held(jobs: list[Job], run: Batch, rounds: RoundsPlan | None) -> int:
    """The batch (or its rounds), with the run tree held by this process."""
    versions.prepare(run.project, jobs, run.runs_root)  # builds compared versions, writes versions.json
    if run.args.executor != "dask":  # a cluster's workers build environments where they run
        scenario.prepare(
            ((j.scenario, isolation.select(j.options.isolation).name) for j in jobs), run.project
        )
    if rounds is None:
        run(jobs)
    else:
        _rounds.run_in_rounds(
            jobs, rounds, run=run, runs_root=run.runs_root, project=run.project, err=sys.stderr
        )
    return 1 if run.errors else 0


@dataclass
class Batch:
    """Runs a batch of jobs (all of them, or one round) with the invocation's settings."""

    args: argparse.Namespace
    project: Path
    runs_root: Path
    seed: int
    retry: tuple[str, ...]
    fail_fast: bool
    options: dict[str, Any]
    errors: int = 0
    """Trials that errored on the harness's side, over every batch run so far."""
    warned: bool = False
    """The protections that will not hold were said on stderr (once per invocation, not per round)."""

    def __call__(self, jobs: list[Job]) -> bool:
        """Plan and execute the jobs; False when fail-fast stopped them (nothing more should run)."""
        args, err = self.args, sys.stderr
        plan = batch.plan(
            jobs,
            project=self.project,
            runs_root=self.runs_root,
            seed=self.seed,
            force=args.force,
            concurrent=args.parallel != 1,
            retry=self.retry,
        )
        if plan.skipped:
            batch.say(err, f"assay: {len(plan.skipped)} finished trial(s) skipped")
        if plan.retried:
            batch.say(
                err,
                f"assay: {len(plan.retried)} trial(s) that failed on the harness's side run again (--retry)",
            )
        if plan.regraded:
            batch.say(err, f"assay: {len(plan.regraded)} finished trial(s) without a grade are graded")
        if not plan.tasks:
            batch.say(err, "assay: nothing to run")
            return True
        if not self.warned:
            _warn_unprotected(jobs)
            self.warned = True
        fail_fast = args.fail_fast or self.fail_fast
        importlib.import_module("harness.report.viewer")  # here, once: forked workers share it

        for matrix in sorted({j.matrix for j in jobs}):
            index.ensure(self.runs_root / matrix)  # graders record each grade into it from the first trial on
        outcomes = batch.execute(
            plan.tasks,
            parallel=args.parallel,
            executor=args.executor,
            fail_fast=fail_fast,
            options=self.options,
            on_finished=write_page,
        )
        counts = batch.summary(outcomes)
        batch.say(err, "assay: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
        io = [o for o in outcomes if o.status == IO_ERROR]
        if io:
            raise TreeUnwritable(
                f"{io[0].detail}; the matrix stopped after {batch.ran(outcomes)} trial(s); rerun to resume"
            )
        self.errors += counts.get("error", 0)
        return not (fail_fast and (counts.get("error") or counts.get("failed")))


def select_and_run(args: argparse.Namespace, *, matrix: str | None, job_ids: list[str] | None = None) -> int:
    """`assay run` and `assay matrix`: the jobs the arguments select (from generated/, or job
    files), run with their matrix's seed, parallelism and fail-fast unless the flags say otherwise."""
    project = Path(args.project).resolve()
    refuse_stale(project)  # grading after each trial reads generated/ too, job files or not
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
        rounds=_rounds.plan(args, settings.rounds),
    )
