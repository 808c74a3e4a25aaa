"""rounds.json, at a matrix's runs root: how a matrix run in rounds went, and what it did not run.

Written by the runner after every round of `assay matrix --until decided` or of a matrix with a
budget (`harness.batch.rounds`), read by the report: the method, the rounds, each comparison's
verdict, the budget and why scheduling stopped, the trials not run and why, and the spend saved
against the full plan.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal, NamedTuple

from pydantic import Field

from harness.artifacts.names import ROUNDS_FILE
from harness.artifacts.records import Record
from harness.artifacts.store import read_record, write_record

ROUNDS_SCHEMA = 1

Key = tuple[str | None, str, str]
"""(version, agent, treatment cell): one comparison against the agent's control."""
Comparisons = dict[Key, tuple[str, tuple[str, ...]]]
"""Every comparison of a plan: its control cell and the scenarios both cells run."""


class Seen(NamedTuple):
    """One finished run of the tree, as the schedule looks at it."""

    version: str | None
    agent: str
    cell: str
    scenario: str
    trial: int
    graded: bool
    """Graded and valid: the run can pair (the report's rule)."""
    passed: bool
    tokens: float | None
    cost: float | None

    def key(self) -> tuple[str | None, str, str, str, int]:
        return (self.version, self.agent, self.cell, self.scenario, self.trial)


class Verdict(Record):
    """Where one comparison (scenario None: its scenarios pooled) or one of its scenarios stands."""

    version: str | None = Field(description="Version label of a version comparison.")
    agent: str = Field(description="Agent id.")
    condition: str = Field(description="Treatment cell.")
    control: str = Field(description="Control cell.")
    scenario: str | None = Field(description="The scenario; None for the comparison over all its scenarios.")
    status: Literal["effect", "below", "open"] = Field(
        description="effect: the interval excludes 0; below: it lies below min_uplift; open: not decided."
    )
    round: int | None = Field(description="The round that decided it.")
    pairs: int = Field(description="Pairs the last look used.")
    value: float | None = Field(description="Uplift at the last look.")
    low: float = Field(description="Repeated-confidence-interval low end (comparison); -1 for a scenario.")
    high: float = Field(description="Repeated-confidence-interval high end (comparison); +1 for a scenario.")
    p: float | None = Field(default=None, description="The clustered test's p-value at the last look.")
    level: float | None = Field(default=None, description="Nominal level of the last look's boundary.")
    e_value: float | None = Field(default=None, description="A scenario's e-value at the last look.")


class Skipped(Record):
    """A planned trial the runner chose not to run."""

    job: str = Field(description="Job id.")
    why: Literal["decided", "budget"] = Field(
        description="decided: every comparison it serves was decided; budget: the matrix budget stopped scheduling."
    )


class Spend(Record):
    """Tokens and money, of what ran and estimated for what did not."""

    tokens: float = Field(description="Tokens (input + output + cache) of the runs in the plan.")
    cost_usd: float | None = Field(description="USD of the runs in the plan; None when a run was not priced.")
    saved_tokens: float | None = Field(
        description="Estimated tokens of the skipped trials (each: the mean of its cell's runs)."
    )
    saved_cost_usd: float | None = Field(description="Estimated USD of the skipped trials.")


class MatrixBudget(Record):
    """A matrix budget and how scheduling met it."""

    tokens: float | None = Field(description="Budget in tokens (None: none).")
    cost_usd: float | None = Field(description="Budget in USD (None: none).")
    stopped_at_round: int | None = Field(description="The round not scheduled because of the budget.")
    reason: str | None = Field(description="Why scheduling stopped.")


class RoundsRecord(Record):
    """rounds.json."""

    schema_version: int = Field(default=ROUNDS_SCHEMA, description="Record version.")
    matrix: str = Field(description="Matrix id.")
    until: Literal["decided", "planned"] = Field(
        description="decided: comparisons stop once decided; planned: every round runs (a budget only)."
    )
    method: str | None = Field(description="The sequential method, when until is decided.")
    alpha: float = Field(description="Chance of declaring any effect that is not there, over all rounds.")
    min_uplift: float = Field(description="The smallest uplift that matters (0: not used).")
    scenario_threshold: float | None = Field(
        default=None, description="The e-value a scenario comparison had to reach."
    )
    rounds_planned: int = Field(description="The planned maximum of rounds (trials per cell).")
    rounds_run: int = Field(description="Rounds whose trials ran.")
    planned: int = Field(description="Trials in the full plan.")
    ran: int = Field(description="Trials of the plan that ran (or had run before).")
    verdicts: list[Verdict] = Field(default_factory=list, description="Every comparison and scenario.")
    skipped: list[Skipped] = Field(default_factory=list, description="Planned trials not run, and why.")
    budget: MatrixBudget | None = Field(default=None, description="The matrix budget, when it has one.")
    spend: Spend = Field(description="What ran, and what the skipped trials would have cost.")
    finished: bool = Field(description="The schedule is over (every round run, decided, or stopped).")


def write_rounds(root: Path, record: RoundsRecord) -> None:
    """Write rounds.json at a matrix's runs root (atomically)."""
    write_record(root / ROUNDS_FILE, record)


def read_rounds(root: Path) -> RoundsRecord | None:
    """rounds.json of a matrix's runs root, or None when the matrix did not run in rounds."""
    path = root / ROUNDS_FILE
    return read_record(path, RoundsRecord, ROUNDS_SCHEMA) if path.is_file() else None


def is_open(verdicts: Sequence[Verdict], key: Key, scenario: str) -> bool:
    """Whether a scenario of a comparison still needs trials: neither it nor its comparison is decided."""
    return not any(
        v.status != "open" and (v.version, v.agent, v.condition) == key and v.scenario in (scenario, None)
        for v in verdicts
    )
