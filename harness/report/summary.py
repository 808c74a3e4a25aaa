"""summary.json: the report's typed, schema-versioned result set.

Everything the renderers draw comes from this one model, so report.md, report.html and the JUnit
XML can be re-rendered from a stored summary.json without the run tree. A reader refuses a summary
written by a newer assay (`FutureSchemaError`): silently dropping fields it does not know would
report a confidently wrong number.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.artifacts.rounds import RoundsRecord
from harness.artifacts.store import FutureSchemaError, write_atomic
from harness.errors import UsageError

SUMMARY_SCHEMA = 4
"""2: per-test pass rates (`tests`) of checks that run a test suite. 3: one clustered test per uplift
(`p_value`, `p_adjusted`, `survives`, `df`, `units`) instead of a design effect. 4: `headline`,
`header.sanity`, section rows divided by every graded run (`graded`)."""
SUMMARY_FILE = "summary.json"


class Model(BaseModel):
    """Base: frozen, unknown keys refused."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Rate(Model):
    """A rate that cannot be quoted without its counts, with its Wilson 95% interval."""

    k: int = Field(description="Successes.")
    n: int = Field(description="Graded runs the rate rests on.")
    low: float = Field(description="Wilson 95% lower bound (0 when n is 0).")
    high: float = Field(description="Wilson 95% upper bound (1 when n is 0).")

    @property
    def value(self) -> float | None:
        """k / n, or None when nothing was graded."""
        return self.k / self.n if self.n else None

    def __str__(self) -> str:
        return f"{self.k / self.n:.2f} ({self.k}/{self.n})" if self.n else f"n/a (0/{self.n})"


class MetricStat(Model):
    """One metric's spread over a cell's graded runs."""

    n: int = Field(description="Runs that reported the metric.")
    mean: float = Field(description="Mean.")
    stddev: float = Field(description="Sample standard deviation (n - 1).")
    min: float = Field(description="Smallest value.")
    max: float = Field(description="Largest value.")


class Counts(Model):
    """Runs by status; only `graded` runs enter rates."""

    runs: int = Field(description="Every run found.")
    graded: int = Field(description="Graded and valid: the denominator of every rate.")
    failed_to_run: int = Field(
        description="No evidence, for a harness-side cause (a crash, an adapter that cannot start, a provider outage the gateway saw); a timeout or a limit is the agent's own end, graded."
    )
    ungradeable: int = Field(
        description="Artifacts missing or unknown scenario: no evidence, not bad evidence."
    )
    invalid: int = Field(
        description="Excluded by what the harness checked: a failed canary, an unenforceable network: off."
    )
    ungraded: int = Field(description="No grade.json yet and no grader available.")
    unreadable: int = Field(
        default=0, description="run.json could not be read (corrupt or not a run record)."
    )
    budget_stops: int = Field(
        default=0,
        description="Runs a per-trial budget stopped (a budget in run.json limits_hit); graded on what they left.",
    )


class Cost(Model):
    """Tokens and cost per run and per usable result."""

    tokens_per_run: float | None = Field(description="Mean total tokens (input+output+cache) per graded run.")
    tokens_per_usable: float | None = Field(description="All graded runs' tokens divided by usable results.")
    cost_per_run: float | None = Field(description="Mean USD per graded run.")
    cost_per_usable: float | None = Field(description="All graded runs' USD divided by usable results.")
    unpriced_runs: int = Field(
        default=0,
        description="Graded runs with usage but no price (a model specs/prices.yaml lacks): while any, no USD is given.",
    )
    peak_context: MetricStat | None = Field(description="Peak context over graded runs.")


class Group(Model):
    """Rates of one group of runs: a cell (scenario x agent x condition x version) or a pooled row."""

    by: Literal["cell", "condition", "split", "family", "agent"] = Field(
        description="What the row pools over."
    )
    key: str = Field(description="The scenario, split, family or agent name; '' for a condition row.")
    version: str | None = Field(description="Version label, when the tree compares versions.")
    agent: str = Field(description="Agent id ('*' for a row pooled over agents).")
    condition: str = Field(description="Cell name, e.g. bin/none/off.")
    control: bool = Field(description="This is the control condition.")
    counts: Counts
    passed: Rate
    usable: Rate
    cost: Cost
    metrics: dict[str, MetricStat] = Field(default_factory=dict, description="Every metric over graded runs.")
    trial_variance: float | None = Field(
        default=None, description="Sample variance of pass (0/1) across trials."
    )


class Uplift(Model):
    """A condition against the control over paired runs (same scenario, agent, trial, version)."""

    scenario: str | None = Field(description="Scenario, or None for the aggregate over scenarios.")
    split: str | None = Field(
        default=None, description="With scenario None: pooled over this split's scenarios only."
    )
    version: str | None
    agent: str
    condition: str
    control: str = Field(description="The control condition subtracted.")
    pairs: int = Field(description="Pairs where both sides are graded.")
    rate: Rate = Field(description="Treatment pass rate over the pairs.")
    control_rate: Rate = Field(description="Control pass rate over the pairs.")
    value: float | None = Field(
        description="rate - control_rate (the mean paired difference); None without pairs."
    )
    low: float = Field(
        description="95% lower bound: mean - t(df) * SE, SE cluster-robust over scenarios (harness/report/inference.py)."
    )
    high: float = Field(description="95% upper bound, from the same SE and t as low.")
    p_value: float = Field(
        description="Two-sided p of the same t-test the interval comes from (< 0.05 exactly when 0 is outside it)."
    )
    df: int = Field(
        description="Degrees of freedom of the t: scenarios - 1, or pairs - 1 within one scenario (0: n too small)."
    )
    units: Literal["scenarios", "pairs", "none"] = Field(
        description="The independent units: scenarios (clustered), pairs (one scenario), none (one pair)."
    )
    p_adjusted: float | None = Field(
        default=None, description="Holm-adjusted p across the comparisons of this row's table."
    )
    survives: bool = Field(
        default=False, description="p_adjusted < 0.05: the uplift survives the multiplicity correction."
    )
    comparisons: int = Field(default=0, description="Comparisons in this row's table (the Holm family).")
    both: int = Field(description="Pairs where both passed.")
    only_treatment: int = Field(description="Discordant: treatment passed, control failed.")
    only_control: int = Field(description="Discordant: control passed, treatment failed.")
    neither: int = Field(description="Pairs where neither passed.")
    mcnemar_p: float = Field(
        description="Exact two-sided McNemar p on the discordant pairs (secondary: it ignores scenarios)."
    )
    clusters: int = Field(description="Scenarios contributing pairs.")
    token_pairs: int = Field(
        description="Pairs where both sides are usable (the only ones whose tokens compare)."
    )
    tokens_treatment: float | None = Field(description="Mean tokens of the treatment over token pairs.")
    tokens_control: float | None = Field(description="Mean tokens of the control over token pairs.")
    detectable: float | None = Field(
        description="Smallest uplift this design detects at 80% power, alpha 0.05: (t_0.975 + t_0.8) * SE, same SE and df as the test."
    )


class Headline(Model):
    """One sentence per agent and treatment: the uplift over its control and what it costs."""

    version: str | None
    agent: str
    treatment: str = Field(description="The treatment condition.")
    control: str = Field(description="The control condition it is compared with.")
    survives: bool = Field(description="The uplift survives the Holm correction of the uplift table.")
    unit: Literal["usd", "tokens"] | None = Field(
        description="What the cost difference is in: money where priced, tokens otherwise, None unmeasured."
    )
    text: str = Field(description="The sentence report.md, report.html and the terminal print.")


class VersionDelta(Model):
    """One condition's uplift at the candidate minus at the baseline; negative is a regression."""

    scenario: str | None
    agent: str
    condition: str
    baseline: Uplift | None
    candidate: Uplift | None
    value: float | None
    note: str = ""


class ControlDrift(Model):
    """The control's own pass rate at each version: base-model and environment noise."""

    agent: str
    baseline: Rate
    candidate: Rate
    value: float | None = Field(description="candidate - baseline.")
    pairs: int = Field(description="Control runs paired across versions (scenario, trial).")
    low: float = Field(description="95% lower bound of the paired drift (same method as Uplift).")
    high: float = Field(description="95% upper bound.")
    p_value: float = Field(description="Two-sided p of the same test.")


class Diagnostic(Model):
    """Something a reader must know before trusting a number, with the evidence."""

    kind: str = Field(
        description="headroom, infra, claimed-infra, sandbox, limit, invalid, failed_to_run, ungradeable, excluded, exclusions-differ, agent-ended, context-advisory, unsafe-edits, unpriced, variance, regrade, flaky-check, no-signal-check, no-discrimination, no-control, ..."
    )
    severity: Literal["info", "warning", "error"]
    message: str
    evidence: list[str] = Field(default_factory=list, description="Run directories or counts that show it.")


class Finding(Model):
    """An input for a tool owner's issue: a failed product layer, a disagreement, a notable exit."""

    layer: str
    kind: Literal["failed-layer", "disagreement", "notable-exit"]
    detail: str
    runs: list[str] = Field(description="Run directories that reproduce it.")


class SectionRow(Model):
    """A numeric leaf of a grade section (tool use, friction, output size...) summed over a condition."""

    section: str = Field(description="Grade section: tool_use, friction, ...")
    key: str = Field(description="Dotted path of the leaf inside the section.")
    version: str | None
    agent: str
    condition: str
    runs: int = Field(description="Graded runs that reported the section (e.g. used the tool).")
    graded: int = Field(default=0, description="Every graded run of the condition: the per-run denominator.")
    total: float = Field(description="Sum over the condition's graded runs.")
    per_run: float = Field(description="total / graded: a run that never used the tool counts as zero.")


class ExpectationRow(Model):
    """An expectation's pass rate per condition; unavailable verdicts are counted apart."""

    expectation: str
    version: str | None
    agent: str
    condition: str
    rate: Rate
    unavailable: int


class CaseRow(Model):
    """One test of a check that runs a suite (`pytest`): its pass rate per scenario and condition."""

    test: str = Field(description="`<check id>::<test id>`.")
    scenario: str
    version: str | None
    agent: str
    condition: str
    rate: Rate = Field(description="Graded runs where the test passed (a skipped test counts as passed).")


class RunEntry(Model):
    """One run, as the JUnit XML and the HTML links need it."""

    dir: str = Field(description="Run directory relative to the tree root.")
    version: str | None
    scenario: str
    agent: str
    condition: str
    trial: int
    status: str
    passed: bool
    usable: bool
    reason: str | None = Field(description="Invalid, error or failed checks.")
    tokens: float | None
    cost: float | None
    duration_s: float | None
    artifacts: list[str] = Field(
        description="Artifact files present (diff.patch, transcript.jsonl, agent.log)."
    )


class Header(Model):
    """How much of the matrix produced evidence."""

    root: str
    totals: Counts
    min_graded_per_cell: int = Field(description="The n that qualifies every number in the report.")
    control: str | None
    control_note: str
    conditions: list[str] = Field(description="Control first, then increasing treatment.")
    agents: list[str]
    scenarios: list[str]
    versions: list[str]
    baseline: str | None
    candidate: str | None
    regraded: bool
    sanity: dict[str, Literal["pass", "fail"]] = Field(
        default_factory=dict,
        description="Sanity agents (agent -> every run should pass / fail): in the rates, in no comparison.",
    )


class CellCompleteness(Model):
    """One cell of one matrix: planned trials, done ones, and the ids of those missing."""

    matrix: str
    cell: str
    planned: int
    done: int
    not_run: list[str] = Field(default_factory=list, description="Job ids with no run directory.")
    skipped: list[str] = Field(
        default_factory=list,
        description="Job ids the matrix's rounds chose not to run (rounds.json: decided, or the budget).",
    )
    unfinished: list[str] = Field(
        default_factory=list, description="Job ids started but not finished and graded (killed, interrupted)."
    )


class Completeness(Model):
    """Planned vs done over the matrices of the tree."""

    planned: int
    done: int
    cells: list[CellCompleteness]


class Summary(Model):
    """The whole report."""

    schema_version: int = Field(default=SUMMARY_SCHEMA, description="Summary format version.")
    header: Header
    headline: list[Headline] = Field(
        default_factory=list, description="One sentence per agent and treatment, in the uplift table's order."
    )
    cells: list[Group] = Field(description="One row per scenario x agent x condition x version.")
    groups: list[Group] = Field(description="Pooled rows: by condition, split, family, agent.")
    uplifts: list[Uplift] = Field(description="Aggregate (scenario None) and per-scenario uplifts.")
    version_deltas: list[VersionDelta]
    control_drift: list[ControlDrift]
    expectations: list[ExpectationRow]
    tests: list[CaseRow] = Field(
        default_factory=list, description="Per-test pass rates of suite checks, one row per test and cell."
    )
    sections: list[SectionRow]
    diagnostics: list[Diagnostic]
    findings: list[Finding]
    runs: list[RunEntry]
    completeness: Completeness | None = Field(
        default=None, description="Planned vs done, when the project's generated/ plans the tree's matrices."
    )
    rounds: list[RoundsRecord] = Field(
        default_factory=list,
        description="rounds.json of each matrix of the tree run in rounds (until decided, a budget): verdicts, stops, spend.",
    )


def write_summary(path: Path, summary: Summary) -> None:
    """Write summary.json atomically."""
    write_atomic(path, summary.model_dump_json(indent=1) + "\n")


def read_summary(path: Path) -> Summary:
    """Read summary.json, refusing a newer schema with a clear message."""
    text = path.read_bytes()
    try:
        summary = Summary.model_validate_json(text)
    except ValidationError:
        _refuse_other_schema(path, json.loads(text))
        raise
    _refuse_other_schema(path, {"schema_version": summary.schema_version})
    return summary


def _refuse_other_schema(path: Path, data: object) -> None:
    version = data.get("schema_version", 0) if isinstance(data, dict) else 0
    if isinstance(version, int) and version < SUMMARY_SCHEMA:
        raise UsageError(
            f"{path}: summary schema_version {version} predates this assay's ({SUMMARY_SCHEMA}); "
            "run `assay report` on the run tree again"
        )
    if isinstance(version, int) and version > SUMMARY_SCHEMA:
        raise FutureSchemaError(
            f"{path}: summary schema_version {version} is newer than this assay understands "
            f"({SUMMARY_SCHEMA}); upgrade assay"
        )
