"""A matrix run in rounds (`--until decided`, a matrix budget): `harness.batch.rounds` wired to the
report's reading of the tree (`report.collect`) and its sequential statistics (`report.sequential`).
Those are imported when rounds run: a plain matrix run (which parses these options) never needs them."""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

from compiler.contract import Job, RoundsPlan
from harness import batch
from harness.artifacts.rounds import RoundsRecord, Seen
from harness.batch import rounds
from harness.errors import UsageError


def observe(root: Path, project: Path) -> list[Seen]:
    """Every finished run under a matrix's runs root, as the schedule looks at it."""
    from harness.report.collect import Unreadable, collect

    if not root.is_dir():
        return []
    return [
        Seen(
            version=run.version,
            agent=run.agent,
            cell=run.condition,
            scenario=run.scenario,
            trial=run.trial,
            graded=run.status == "graded",
            passed=run.passed,
            tokens=run.tokens,
            cost=run.cost,
        )
        for run in collect(root, project=project)
        if not isinstance(run, Unreadable)
    ]


def add_options(parser: argparse.ArgumentParser) -> None:
    """--until, --min-uplift, --budget-tokens, --budget-usd (run and matrix)."""
    parser.add_argument(
        "--until",
        choices=("decided", "planned"),
        default=None,
        help="decided: run in rounds and stop each comparison once its uplift is decided "
        "(default: the matrix's `until`, else planned: every trial)",
    )
    parser.add_argument(
        "--min-uplift",
        type=_bounded(0.0, 1.0),
        default=None,
        help="with --until decided: the smallest uplift that matters (default: the matrix's, else 0)",
    )
    parser.add_argument(
        "--budget-tokens",
        type=_bounded(1.0, 1e15),
        default=None,
        help="matrix budget in tokens: no round is scheduled past it (default: the matrix's)",
    )
    parser.add_argument(
        "--budget-usd",
        type=_bounded(1e-9, 1e9),
        default=None,
        help="matrix budget in USD, priced by specs/prices.yaml (default: the matrix's)",
    )


def _bounded(low: float, high: float) -> Callable[[str], float]:
    """An argparse type: a number in [low, high], else a one-line usage error."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if 0 < low < 1e-6 and value < low:
            raise argparse.ArgumentTypeError(f"{value:g} must be above 0")
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value:g} is out of range ({low:g} to {high:g})")
        return value

    return parse


def plan(args: argparse.Namespace, matrix: RoundsPlan | None) -> RoundsPlan | None:
    """The matrix's rounds plan with the flags over it; None: run every trial at once."""
    base = matrix or RoundsPlan()
    chosen = RoundsPlan(
        until=args.until or base.until,
        min_uplift=args.min_uplift if args.min_uplift is not None else base.min_uplift,
        budget_tokens=int(args.budget_tokens) if args.budget_tokens is not None else base.budget_tokens,
        budget_cost_usd=args.budget_usd if args.budget_usd is not None else base.budget_cost_usd,
    )
    if chosen.until == "planned" and chosen.budget_tokens is None and chosen.budget_cost_usd is None:
        return None
    return chosen


def run_in_rounds(
    jobs: Sequence[Job],
    chosen: RoundsPlan,
    *,
    run: Callable[[list[Job]], bool],
    runs_root: Path,
    project: Path,
    err: TextIO | None,
) -> RoundsRecord:
    """Run one matrix's jobs in rounds; progress and the outcome on `err`."""
    from harness.report import sequential
    from harness.report.spend import terminal_lines

    matrices = {j.matrix for j in jobs}
    if len(matrices) != 1:
        raise UsageError(
            f"running in rounds needs the jobs of one matrix; these span {', '.join(sorted(matrices))}"
        )
    matrix = matrices.pop()
    schedule = rounds.Schedule(
        until=chosen.until,
        min_uplift=chosen.min_uplift,
        budget_tokens=chosen.budget_tokens,
        budget_cost_usd=chosen.budget_cost_usd,
    )
    root = runs_root / matrix
    comps = rounds.comparisons(jobs)
    planned = max((j.trial for j in jobs), default=0)
    plan = sequential.design(comps, planned, min_uplift=schedule.min_uplift)
    if schedule.until == "decided" and not comps:
        batch.say(err, "assay: until decided: no comparison with a control to decide; every trial runs")
    if schedule.until == "decided":
        schedule = dataclasses.replace(
            schedule, method=sequential.METHOD, alpha=plan.alpha, threshold=plan.threshold
        )
        batch.say(
            err,
            f"assay: until decided: {len(comps)} comparison(s) over {plan.scenario_comparisons} scenario "
            f"comparison(s), at most {planned} round(s); {sequential.METHOD}",
        )

    def one_round(wanted: list[Job]) -> bool:
        batch.say(err, f"assay: round {wanted[0].trial} of {planned}: {len(wanted)} trial(s)")
        return run(wanted)

    record = rounds.run_rounds(
        jobs,
        schedule=schedule,
        run=one_round,
        observe=lambda: observe(root, project),
        judge=lambda seen, looks: sequential.judge(seen, looks, comps, plan),
        root=root,
        matrix=matrix,
    )
    for line in terminal_lines(record):
        batch.say(err, f"assay: {line}")
    return record
