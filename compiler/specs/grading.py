"""`kind: expectation` and `kind: prices` — specs the grader reads (harness/grade).

The compiler validates their shape so a typo is a spec error with a position; the
grader evaluates them. An expectation has exactly one predicate; a price table is
pinned by its version, recorded with every cost computed from it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from compiler.specs.base import SpecModel
from compiler.specs.checks import Count, EventsParams, SnapshotParams, TraceParams, TranscriptParams

PREDICATES = ("trace", "transcript", "events", "snapshot", "friction", "all", "any", "not")


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

    trace: TraceParams | None = Field(default=None, description="What the agent ran of a traced tool.")
    transcript: TranscriptParams | None = Field(default=None, description="What the transcript holds.")
    events: EventsParams | None = Field(default=None, description="Events a treatment logged.")
    snapshot: SnapshotParams | None = Field(default=None, description="Validity of the entry over time.")
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


Price = Annotated[float, Field(ge=0, allow_inf_nan=False)]
"""USD per million tokens: a finite number, at least 0."""


class Rates(SpecModel):
    """USD per million tokens of one model."""

    input: Price = Field(description="Uncached input tokens.")
    output: Price = Field(description="Output tokens (reasoning included).")
    cache_read: Price | None = Field(
        default=None, description="Cache-read input tokens (default: the input rate)."
    )
    cache_write: Price | None = Field(
        default=None, description="Cache-write input tokens (default: the input rate)."
    )


class PricesDoc(SpecModel):
    """`specs/prices.yaml`: the pinned price table costs are computed from (never the agent's own figure)."""

    kind: Literal["prices"] = Field(description="Always `prices`.")
    version: str = Field(min_length=1, description="Table version, recorded with every cost.")
    unit: Literal["usd_per_million_tokens"] = Field(
        default="usd_per_million_tokens", description="The only unit."
    )
    source: str | None = Field(default=None, description="Where the rates were taken from, and when.")
    models: dict[str, Rates] = Field(description="Model id (or id prefix) -> rates.")
    meta: dict[str, Any] | None = Field(default=None, description="Free-form metadata.")
