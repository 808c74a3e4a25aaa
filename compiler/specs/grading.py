"""`kind: expectation` and `kind: prices` — specs the grader reads (harness/grade).

The compiler validates their shape so a typo is a spec error with a position; the
grader evaluates them. An expectation has exactly one predicate; a price table is
pinned by its version, recorded with every cost computed from it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from compiler.specs.base import SpecModel

PREDICATES = ("trace", "transcript", "events", "snapshot", "friction", "all", "any", "not")
Count = Annotated[int, Field(ge=0)]
TextOrList = str | list[str]


class TracePredicate(SpecModel):
    """What the agent ran of a traced tool (the `trace` check's parameters)."""

    command: str | None = Field(default=None, description="Traced command name (default: any).")
    subcommand: str | list[str] | None = Field(default=None, description="First argument(s) to match.")
    exit: int | list[int] | None = Field(default=None, description="Count only invocations with these exits.")
    after_last_write: bool | None = Field(
        default=None, description="Count only invocations after the last write of an entry file."
    )
    min: Count | None = Field(default=None, description="Minimum invocations (default 1).")
    max: Count | None = Field(default=None, description="Maximum invocations.")


class TranscriptPredicate(SpecModel):
    """What the normalized transcript holds (the `transcript` check's parameters)."""

    contains: TextOrList | None = Field(default=None, description="Text or alternatives that must appear.")
    absent: TextOrList | None = Field(default=None, description="Text or alternatives that must not appear.")
    regex: bool | None = Field(default=None, description="Treat contains/absent as regexes.")
    role: str | None = Field(default=None, description="Only events of this role.")
    tool: str | None = Field(default=None, description="Only events of this tool.")
    min: Count | None = Field(default=None, description="Minimum matching rows (default 1).")
    max: Count | None = Field(default=None, description="Maximum matching rows.")


class EventsPredicate(SpecModel):
    """Events a treatment logged (the `events` check's parameters)."""

    file: str | None = Field(default=None, description="JSONL file in the state dir (default events.jsonl).")
    where: dict[str, Any] | None = Field(default=None, description="Field -> value filter.")
    min: Count | None = Field(default=None, description="Minimum matching events (default 1).")
    max: Count | None = Field(default=None, description="Maximum matching events.")


class SnapshotPredicate(SpecModel):
    """Validity of the entry over time (the `snapshot` check's parameters)."""

    authority: str | None = Field(default=None, description="Authority whose checks judge each snapshot.")
    run: str | None = Field(default=None, description="Validity command per snapshot (exit 0 = valid).")
    exit: int | None = Field(default=None, description="Exit status of `run` that means valid (default 0).")
    timeout_s: float | None = Field(default=None, gt=0, description="Wall-clock limit of `run`.")
    final_valid: bool | None = Field(
        default=None, description="The last snapshot must be valid (default true)."
    )
    max_regressions: Count | None = Field(default=None, description="Allowed valid-to-invalid transitions.")
    first_valid_within: Count | None = Field(
        default=None, description="The first valid snapshot's index must be at most this."
    )


class BoundDoc(SpecModel):
    """A friction count's bounds."""

    min: Count | None = Field(default=None, description="Lowest allowed count.")
    max: Count | None = Field(default=None, description="Highest allowed count.")


Bound = Count | BoundDoc


class FrictionDoc(SpecModel):
    """Friction bounds: per field of the grade's friction (harness.gradeschema.Friction), a maximum or {min, max}."""

    usage_errors: Bound | None = Field(default=None, description="Invocations that exited with code 2.")
    unknown_subcommands: Bound | None = Field(
        default=None, description="Usage errors naming a subcommand the tool does not have."
    )
    help_lookups: Bound | None = Field(default=None, description="Invocations asking for help.")
    retries_after_failure: Bound | None = Field(
        default=None, description="Invocations of the same subcommand right after it failed."
    )
    malformed_serve_requests: Bound | None = Field(
        default=None, description="Serve-session requests that were not valid JSON or were refused."
    )
    identical_repeats: Bound | None = Field(
        default=None, description="Invocations identical to the previous one with no write between them."
    )
    repeated_failures: Bound | None = Field(
        default=None, description="Longest run of one identical failing command line."
    )


class PredicateDoc(SpecModel):
    """A predicate: exactly one of its fields (the compiler checks it, E243)."""

    trace: TracePredicate | None = Field(default=None, description="What the agent ran of a traced tool.")
    transcript: TranscriptPredicate | None = Field(default=None, description="What the transcript holds.")
    events: EventsPredicate | None = Field(default=None, description="Events a treatment logged.")
    snapshot: SnapshotPredicate | None = Field(default=None, description="Validity of the entry over time.")
    friction: FrictionDoc | None = Field(default=None, description="Friction bounds.")
    all: list[PredicateDoc] | None = Field(default=None, description="Every predicate holds.")
    any: list[PredicateDoc] | None = Field(default=None, description="At least one predicate holds.")
    not_: PredicateDoc | None = Field(default=None, alias="not", description="The predicate does not hold.")

    def given(self) -> list[str]:
        """The predicate keys this map sets."""
        return [p for p in PREDICATES if getattr(self, "not_" if p == "not" else p) is not None]


class WhenDoc(SpecModel):
    """Which runs an expectation applies to (every clause must hold)."""

    stability_risk: bool | None = Field(default=None, description="Only scenarios with this stability_risk.")
    levels: dict[str, str | list[str]] | None = Field(
        default=None, description="Factor -> level or levels the run's cell must have."
    )
    family: str | list[str] | None = Field(default=None, description="Only these scenario families.")
    scenario: str | list[str] | None = Field(default=None, description="Only these scenario ids.")


class ExpectationDoc(PredicateDoc):
    """`specs/expectations/<id>.yaml`: a named predicate over a run's trace, snapshots, transcript, events."""

    kind: Literal["expectation"] = Field(description="Always `expectation`.")
    id: str = Field(description="Expectation id, referenced by name from a scenario's `expectations:`.")
    description: str | None = Field(default=None, description="What it asks, in words (shown in reports).")
    when: WhenDoc | None = Field(default=None, description="Only for runs matching all of its clauses.")
    meta: dict[str, Any] | None = Field(default=None, description="Free-form metadata.")


class ExpectationEntry(PredicateDoc):
    """One entry of a scenario's `expectations:` given as a map: an inline expectation (with its
    predicate), or `ref:` a library expectation whose keys it overrides (a `when`, say)."""

    ref: str | None = Field(default=None, description="A library expectation this entry overrides.")
    id: str | None = Field(default=None, description="Id of an inline expectation (shown in grades).")
    name: str | None = Field(default=None, description="Same as `ref` (seed 000's form).")
    description: str | None = Field(default=None, description="What it asks, in words.")
    when: WhenDoc | None = Field(default=None, description="Only for runs matching all of its clauses.")
    meta: dict[str, Any] | None = Field(default=None, description="Free-form metadata.")


class Rates(SpecModel):
    """USD per million tokens of one model."""

    input: float = Field(description="Uncached input tokens.")
    output: float = Field(description="Output tokens (reasoning included).")
    cache_read: float | None = Field(
        default=None, description="Cache-read input tokens (default: the input rate)."
    )
    cache_write: float | None = Field(
        default=None, description="Cache-write input tokens (default: the input rate)."
    )


class PricesDoc(SpecModel):
    """`specs/prices.yaml`: the pinned price table costs are computed from (never the agent's own figure)."""

    kind: Literal["prices"] = Field(description="Always `prices`.")
    version: str = Field(description="Table version, recorded with every cost.")
    unit: Literal["usd_per_million_tokens"] = Field(
        default="usd_per_million_tokens", description="The only unit."
    )
    source: str | None = Field(default=None, description="Where the rates were taken from, and when.")
    models: dict[str, Rates] = Field(description="Model id (or id prefix) -> rates.")
    meta: dict[str, Any] | None = Field(default=None, description="Free-form metadata.")
