"""A matrix run in rounds (`--until decided`, a matrix budget): `harness.batch.rounds` wired to the
report's reading of the tree (`report.collect`) and its sequential statistics (`report.sequential`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

from compiler.contract import Job
from harness import batch
from harness.artifacts.rounds import RoundsRecord, Seen
from harness.batch import rounds
from harness.report import sequential
from harness.report.collect import Unreadable, collect
from harness.report.spend import terminal_lines


def observe(root: Path, project: Path) -> list[Seen]:
    """Every finished run under a matrix's runs root, as the schedule looks at it."""
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


def run_in_rounds(
    jobs: Sequence[Job],
    schedule: rounds.Schedule,
    *,
    run: Callable[[list[Job]], bool],
    root: Path,
    project: Path,
    err: TextIO | None,
) -> RoundsRecord:
    """Run the jobs in rounds; progress and the outcome on `err`."""
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
        matrix=jobs[0].matrix if jobs else "",
    )
    for line in terminal_lines(record):
        batch.say(err, f"assay: {line}")
    return record
