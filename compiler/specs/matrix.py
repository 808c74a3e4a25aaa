"""`kind: matrix` — agents x cells x scenarios x trials."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from compiler.specs.base import SpecModel
from compiler.specs.project import LimitsDoc, OptionsDoc

Names = Annotated[list[str], Field(min_length=1)]
"""A list that selects: an empty one would select nothing."""


class ScenarioFilter(SpecModel):
    """Select scenarios by attribute."""

    split: Literal["train", "test"] | None = Field(default=None, description="Only this split.")
    family: str | Names | None = Field(default=None, description="Only these families.")
    language: str | Names | None = Field(default=None, description="Only these languages.")
    ids: Names | None = Field(default=None, description="Only these ids.")
    tags: str | Names | None = Field(default=None, description="Only scenarios with one of these tags.")


class VersionDoc(SpecModel):
    """One side of a version comparison."""

    label: str = Field(description="Version label recorded in runs.")
    path: str | None = Field(default=None, description="Folder of the build, put first on the tool's PATH.")
    package: str | None = Field(default=None, description="Package spec to install.")
    build: str | None = Field(default=None, description="Command that builds it.")


class BudgetDoc(SpecModel):
    """A budget for the whole matrix: no round is scheduled whose projected spend would pass it."""

    tokens: int | None = Field(default=None, ge=1, description="Tokens (input + output + cache).")
    cost_usd: float | None = Field(default=None, gt=0, description="USD, priced by specs/prices.yaml.")


class MatrixDoc(SpecModel):
    """`specs/matrices/<id>.yaml`."""

    kind: Literal["matrix"] = Field(description="Always `matrix`.")
    id: str = Field(description="Matrix id (slug).")
    extends: str | None = Field(default=None, description="Another matrix id to inherit from (deep-merge).")
    description: str | None = Field(default=None, description="What the matrix measures.")
    default: bool | None = Field(
        default=None, description="The matrix nox bench-<cell> sessions come from (exactly one)."
    )
    agents: list[str] | None = Field(default=None, description="Agent ids.")
    factors: dict[str, Names] | None = Field(
        default=None, description="Factor -> levels to use (default: all levels)."
    )
    cells: Names | None = Field(
        default=None,
        description="Only these cells (names like bin/none/off), as seed 000's matrix.json lists them.",
    )
    scenarios: Literal["all"] | Names | ScenarioFilter | None = Field(
        default=None, description="`all`, a list of ids, or a filter."
    )
    trials: int | None = Field(default=None, ge=1, description="Trials per agent x cell x scenario.")
    exclude: list[dict[str, Any]] | None = Field(
        default=None, description="Partial combinations removed (GitHub Actions semantics)."
    )
    include: list[dict[str, Any]] | None = Field(
        default=None, description="Combinations extended or added (GitHub Actions semantics)."
    )
    max_jobs: int | None = Field(
        default=None, ge=0, description="Cap on the trial count (an error when exceeded)."
    )
    parallel: int | None = Field(default=None, ge=1, description="Concurrent trials.")
    seed: int | None = Field(default=None, description="Shuffle seed of the run order.")
    fail_fast: bool | None = Field(
        default=None, description="Stop at the first failed trial (default false)."
    )
    versions: dict[str, VersionDoc] | None = Field(
        default=None, min_length=2, description="Version comparison: name -> version (two or more)."
    )
    until: Literal["planned", "decided"] | None = Field(
        default=None,
        description="decided: run in rounds and stop each comparison once its uplift is decided (default planned).",
    )
    min_uplift: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="The smallest uplift that matters: under until: decided, a comparison whose interval lies below it stops.",
    )
    budget: BudgetDoc | None = Field(default=None, description="A budget for the whole matrix.")
    limits: LimitsDoc | None = Field(default=None, description="Per-trial limits.")  # type: ignore[valid-type]
    options: OptionsDoc | None = Field(default=None, description="Run options.")  # type: ignore[valid-type]
    meta: dict[str, Any] | None = Field(default=None, description="Free-form metadata.")
