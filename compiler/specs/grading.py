"""`kind: expectation` and `kind: prices` — specs the grader reads (harness/grade).

The compiler validates their shape so a typo is a spec error with a position; the
grader evaluates them. An expectation has exactly one predicate; a price table is
pinned by its version, recorded with every cost computed from it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from compiler.specs.base import SpecModel

PREDICATES = ("trace", "transcript", "events", "snapshot", "friction", "all", "any", "not")


class ExpectationDoc(SpecModel):
    """`specs/expectations/<id>.yaml`: a named predicate over a run's trace, snapshots, transcript, events."""

    kind: Literal["expectation"] = Field(description="Always `expectation`.")
    id: str = Field(description="Expectation id, referenced by name from a scenario's `expectations:`.")
    description: str | None = Field(default=None, description="What it asks, in words (shown in reports).")
    when: dict[str, Any] | None = Field(
        default=None,
        description="Only for runs matching: stability_risk, levels {factor: level(s)}, family, scenario.",
    )
    trace: dict[str, Any] | None = Field(
        default=None, description="Trace predicate: command, subcommand, exit, after_last_write, min, max."
    )
    transcript: dict[str, Any] | None = Field(
        default=None, description="Transcript predicate: contains / absent, regex, role, tool, min, max."
    )
    events: dict[str, Any] | None = Field(
        default=None, description="Event-log predicate: file, where, min, max."
    )
    snapshot: dict[str, Any] | None = Field(
        default=None,
        description="Snapshot predicate: authority / run, final_valid, max_regressions, first_valid_within.",
    )
    friction: dict[str, Any] | None = Field(
        default=None, description="Friction bounds: field -> max, or {min, max}."
    )
    all: list[dict[str, Any]] | None = Field(default=None, description="Every predicate holds.")
    any: list[dict[str, Any]] | None = Field(default=None, description="At least one predicate holds.")
    not_: dict[str, Any] | None = Field(default=None, alias="not", description="The predicate does not hold.")
    meta: dict[str, Any] | None = Field(default=None, description="Free-form metadata.")

    @model_validator(mode="after")
    def _one_predicate(self) -> ExpectationDoc:
        given = [p for p in PREDICATES if getattr(self, "not_" if p == "not" else p) is not None]
        if len(given) != 1:
            raise ValueError(
                f"an expectation needs exactly one predicate of {', '.join(PREDICATES)} (got {given or 'none'})"
            )
        return self


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
