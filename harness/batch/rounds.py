"""A matrix in rounds: trial k of every job still needed, then a look, then the next round.

Two reasons to run a matrix so: `--until decided` (a comparison stops spending once its uplift is
decided; the rest go on to the planned maximum) and a matrix budget (scheduling stops before the
projected spend would pass it). Round k runs trial k of: every cell of an open comparison (the
treatment and its control, paired, balanced across scenarios), and every job in no comparison
(sanity agents, agents without a control) while any comparison is open. The statistics are the
caller's (`judge`; the CLI wires `harness.report.sequential`), so this package stays below report.
After each round `rounds.json` says where things stand; a rerun replays the looks from the tree
and resumes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from statistics import fmean
from typing import Literal

from compiler.contract import Job
from harness.artifacts.rounds import (
    Comparisons,
    MatrixBudget,
    RoundsRecord,
    Seen,
    Skipped,
    Spend,
    Verdict,
    is_open,
    write_rounds,
)

Unit = tuple[str | None, str, str, str]
"""(version, agent, cell, scenario): the jobs of one cell of one scenario, one per trial."""

Judge = Callable[[Sequence[Seen], int], list[Verdict]]
"""(the tree's runs, rounds to look at) -> every verdict after that many looks."""


@dataclass(frozen=True)
class Schedule:
    """How to run the rounds."""

    until: Literal["decided", "planned"] = "planned"
    budget_tokens: float | None = None
    budget_cost_usd: float | None = None
    alpha: float = 0.05
    min_uplift: float = 0.0
    method: str | None = None
    threshold: float | None = None
    """The e-value a scenario comparison must reach (for the record)."""


def unit(job: Job) -> Unit:
    return (job.version, job.agent.id, job.cell.name, job.scenario.id)


def comparisons(jobs: Iterable[Job]) -> Comparisons:
    """(version, agent, treatment) -> (control cell, scenarios that have both cells), sanity agents left out."""
    control: dict[tuple[str | None, str], str] = {}
    cells: dict[tuple[str | None, str, str], set[str]] = defaultdict(set)
    for job in jobs:
        if job.agent.sanity:
            continue
        if job.cell.control:
            control[(job.version, job.agent.id)] = job.cell.name
        cells[(job.version, job.agent.id, job.cell.name)].add(job.scenario.id)
    out: Comparisons = {}
    for (version, agent, cell), scenarios in sorted(cells.items(), key=str):
        base = control.get((version, agent))
        if base is None or cell == base:
            continue
        shared = sorted(scenarios & cells[(version, agent, base)])
        if shared:
            out[(version, agent, cell)] = (base, tuple(shared))
    return out


def needed(job: Job, comps: Comparisons, verdicts: Sequence[Verdict]) -> bool:
    """Whether the job's trial still serves an open comparison (or, in none, whether any is open);
    with no comparison at all there is nothing to decide, and every trial runs."""
    if not comps:
        return True
    version, agent, cell, scenario = unit(job)
    treatment = (version, agent, cell)
    if treatment in comps:
        return is_open(verdicts, treatment, scenario)
    served = [
        key
        for key, (base, scenarios) in comps.items()
        if key[:2] == (version, agent) and base == cell and scenario in scenarios
    ]
    if served:
        return any(is_open(verdicts, key, scenario) for key in served)
    return any(is_open(verdicts, key, s) for key, (_, scenarios) in comps.items() for s in scenarios)


class Estimates:
    """Spend per run, from the runs so far: the mean of the same cell and scenario, else of the cell."""

    def __init__(self, seen: Sequence[Seen]) -> None:
        by_unit: dict[Unit, list[Seen]] = defaultdict(list)
        by_cell: dict[tuple[str | None, str, str], list[Seen]] = defaultdict(list)
        for run in seen:
            by_unit[(run.version, run.agent, run.cell, run.scenario)].append(run)
            by_cell[(run.version, run.agent, run.cell)].append(run)
        self.by_unit, self.by_cell = by_unit, by_cell

    def _runs(self, job: Job) -> list[Seen]:
        return self.by_unit.get(unit(job)) or self.by_cell.get(unit(job)[:3]) or []

    def tokens(self, job: Job) -> float | None:
        runs = self._runs(job)
        return fmean(r.tokens or 0.0 for r in runs) if runs else None

    def cost(self, job: Job) -> float | None:
        """None when nothing is known (no runs yet) or a run used tokens no price covers."""
        costs = [run_cost(r) for r in self._runs(job)]
        return fmean(c for c in costs if c is not None) if costs and None not in costs else None


def run_cost(run: Seen) -> float | None:
    """A run's USD: 0 without model usage, None when it used tokens no price covers."""
    if run.cost is not None:
        return run.cost
    return 0.0 if not run.tokens else None


def _total(values: Iterable[float | None]) -> float | None:
    items = list(values)
    return None if None in items else sum(v for v in items if v is not None)


def trial_key(job: Job) -> tuple[str | None, str, str, str, int]:
    """What `Seen.key()` is for the job's run."""
    return (*unit(job), job.trial)


@dataclass
class _Progress:
    """The schedule so far: what a rounds.json written now says."""

    rounds: int
    done: int = 0
    skipped: list[Skipped] = field(default_factory=list)
    budget_stop: tuple[int, str] | None = None


def run_rounds(
    jobs: Sequence[Job],
    *,
    schedule: Schedule,
    run: Callable[[list[Job]], bool],
    observe: Callable[[], list[Seen]],
    judge: Judge,
    root: Path,
    matrix: str,
) -> RoundsRecord:
    """Run the jobs round by round (see the module docstring); rounds.json is rewritten after each.

    `run` runs one round's jobs and says whether to go on (False: fail-fast stopped the batch).
    """
    by_round: dict[int, list[Job]] = defaultdict(list)
    for job in jobs:
        by_round[job.trial].append(job)
    state = _Progress(rounds=max(by_round, default=0))
    comps = comparisons(jobs)
    plan = {trial_key(j) for j in jobs}

    def seen() -> list[Seen]:
        return [r for r in observe() if r.key() in plan]

    def rest(after: int, why: Literal["decided", "budget"]) -> list[Skipped]:
        return [Skipped(job=j.id, why=why) for r in range(after + 1, state.rounds + 1) for j in by_round[r]]

    for k in range(1, state.rounds + 1):
        runs = seen()
        verdicts = judge(runs, k - 1) if schedule.until == "decided" else []
        wanted = [j for j in by_round[k] if schedule.until == "planned" or needed(j, comps, verdicts)]
        state.skipped += [Skipped(job=j.id, why="decided") for j in by_round[k] if j not in wanted]
        stop = _over_budget(schedule, runs, wanted, k)
        if stop is not None:
            state.budget_stop = (k, stop)
            state.skipped += [Skipped(job=j.id, why="budget") for j in wanted] + rest(k, "budget")
            break
        if not wanted:
            state.skipped += rest(k, "decided")
            break
        go_on = run(wanted)
        state.done = k
        _write(root, matrix, schedule, jobs, comps, judge, seen(), state, finished=False)
        if not go_on:  # fail-fast: what is left runs on resume
            return _write(root, matrix, schedule, jobs, comps, judge, seen(), state, finished=False)
    return _write(root, matrix, schedule, jobs, comps, judge, seen(), state, finished=True)


def _over_budget(schedule: Schedule, seen: Sequence[Seen], wanted: Sequence[Job], k: int) -> str | None:
    """Why round k must not be scheduled (its projected spend would pass the budget), or None."""
    if schedule.budget_tokens is None and schedule.budget_cost_usd is None:
        return None
    est = Estimates(seen)
    ran = {r.key() for r in seen}
    todo = [j for j in wanted if trial_key(j) not in ran]
    if schedule.budget_tokens is not None:
        spent = sum(r.tokens or 0.0 for r in seen)
        guesses = [est.tokens(j) for j in todo]
        projected = sum(g or 0.0 for g in guesses)
        if spent >= schedule.budget_tokens or spent + projected > schedule.budget_tokens:
            return (
                f"round {k} ({len(todo)} trials, about {projected:,.0f} tokens) would take the spend from "
                f"{spent:,.0f} past the budget of {schedule.budget_tokens:,.0f} tokens"
            )
    if schedule.budget_cost_usd is not None:
        spent_usd = _total(run_cost(r) for r in seen)
        if spent_usd is None:
            return f"round {k}: the runs so far used tokens that specs/prices.yaml does not price, so a money budget cannot be kept"
        projected_usd = sum(est.cost(j) or 0.0 for j in todo)  # every run so far is priced (above)
        if spent_usd >= schedule.budget_cost_usd or spent_usd + projected_usd > schedule.budget_cost_usd:
            return (
                f"round {k} ({len(todo)} trials, about ${projected_usd:.4f}) would take the spend from "
                f"${spent_usd:.4f} past the budget of ${schedule.budget_cost_usd:.4f}"
            )
    return None


def _write(
    root: Path,
    matrix: str,
    schedule: Schedule,
    jobs: Sequence[Job],
    comps: Comparisons,
    judge: Judge,
    seen: list[Seen],
    state: _Progress,
    *,
    finished: bool,
) -> RoundsRecord:
    est = Estimates(seen)
    by_id = {j.id: j for j in jobs}
    not_run = [by_id[s.job] for s in state.skipped]
    has_budget = schedule.budget_tokens is not None or schedule.budget_cost_usd is not None
    record = RoundsRecord(
        matrix=matrix,
        until=schedule.until,
        method=schedule.method if schedule.until == "decided" else None,
        alpha=schedule.alpha,
        min_uplift=schedule.min_uplift,
        scenario_threshold=schedule.threshold if schedule.until == "decided" else None,
        rounds_planned=state.rounds,
        rounds_run=state.done,
        planned=len(jobs),
        ran=len(seen),
        verdicts=judge(seen, state.done) if schedule.until == "decided" and comps else [],
        skipped=state.skipped,
        budget=MatrixBudget(
            tokens=schedule.budget_tokens,
            cost_usd=schedule.budget_cost_usd,
            stopped_at_round=state.budget_stop[0] if state.budget_stop else None,
            reason=state.budget_stop[1] if state.budget_stop else None,
        )
        if has_budget
        else None,
        spend=Spend(
            tokens=sum(r.tokens or 0.0 for r in seen),
            cost_usd=_total(run_cost(r) for r in seen),
            saved_tokens=_total(est.tokens(j) for j in not_run),
            saved_cost_usd=_total(est.cost(j) for j in not_run),
        ),
        finished=finished,
    )
    write_rounds(root, record)
    return record
