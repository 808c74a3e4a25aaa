"""`kind: scenario` — one realistic task (also seed 000's scenario.json)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from compiler.specs.base import SpecModel
from compiler.specs.grading import ExpectationEntry


class StepDoc(SpecModel):
    """One session of a multi-session scenario."""

    name: str | None = Field(default=None, description="Step label (default step-NN).")
    prompt: str = Field(description="Prompt file (a Jinja2 template), relative to the scenario folder.")
    evidence: dict[str, str] | None = Field(
        default=None, description="Workspace path -> file present only during this step."
    )
    fresh_repo: bool | None = Field(default=None, description="Reset the working tree before this step.")


class NegativeDoc(SpecModel):
    """A named overlay that must fail exactly the checks it names."""

    fails: list[str] = Field(description="Check ids the overlay must fail, and only those.")
    patch: str | None = Field(default=None, description="Unified diff applied instead of the overlay folder.")
    description: str | None = Field(default=None, description="What the overlay breaks.")


class MountDoc(SpecModel):
    """A folder of the scenario made visible at an absolute path inside the sandbox."""

    path: str = Field(description="Absolute path where it appears (e.g. /data, /tests).")
    from_: str = Field(alias="from", description="Folder, relative to the scenario file.")
    writable: bool | None = Field(
        default=None, description="A per-trial copy the agent may change (default: read-only)."
    )
    hidden: bool | None = Field(
        default=None, description="Only the checks see it, never the agent (a suite's hidden tests)."
    )
    reference: str | None = Field(
        default=None,
        description="Folder, relative to the scenario file, laid on a writable mount for the reference"
        " (what the reference solution changes there): the oracle applies it, validate judges it.",
    )


class EnvironmentDoc(SpecModel):
    """What the scenario needs installed: built once, cached, used offline by the agent and the checks."""

    python: str | None = Field(
        default=None,
        description="Interpreter version the scenario needs, e.g. '3.13' (refused where absent).",
    )
    pip: list[str] | None = Field(default=None, description="pip requirements (name==version, ...).")
    apt: list[str] | None = Field(default=None, description="Debian packages.")


class ScenarioLimitsDoc(SpecModel):
    """Limits of this scenario's trials; each stays within the matrix's."""

    timeout_s: float | None = Field(default=None, description="Agent wall-clock limit per session.")
    cpus: float | None = Field(default=None, description="CPUs the agent's process tree may use.")
    memory_mb: int | None = Field(default=None, description="Memory limit of the agent's process tree.")


class ScenarioDoc(SpecModel):
    """`scenarios/<id>/scenario.yaml`."""

    kind: Literal["scenario"] = Field(description="Always `scenario`.")
    id: str = Field(description="Scenario id (= folder name).")
    extends: str | None = Field(default=None, description="Another scenario id to inherit from (deep-merge).")
    description: str | None = Field(default=None, description="What the task is.")
    family: str | None = Field(
        default=None, description="Family of related scenarios (one family, one split)."
    )
    language: str | None = Field(
        default=None, description="Language of the entry; one the project declares supported."
    )
    split: Literal["train", "test"] | None = Field(default=None, description="train or test.")
    source: str | None = Field(default=None, description="Provenance of the requirement.")
    reference_note: str | None = Field(default=None, description="Provenance of the reference solution.")
    entry: str | list[str] | None = Field(
        default=None, description="Entry file(s), snapshotted after each write."
    )
    watch: list[str] | None = Field(default=None, description="Files to snapshot instead of the entry.")
    writable: list[str] | None = Field(
        default=None, description="Globs the agent may change (default: everything)."
    )
    runtime_only: list[str] | None = Field(
        default=None, description="Claims only a live runtime could verify."
    )
    stability_risk: bool | None = Field(
        default=None, description="Finishing safely needs lint/analysis, not only validity."
    )
    forbid_words: list[str] | None = Field(default=None, description="Words the prompt must not contain.")
    prompt: str | None = Field(
        default=None, description="Prompt file (a Jinja2 template), default prompt.md."
    )
    steps: list[StepDoc] | None = Field(default=None, description="Sessions of a multi-session scenario.")
    checks: list[dict[str, Any]] | None = Field(
        default=None, description="Checks, each with id, kind, layer and the kind's parameters."
    )
    negatives: dict[str, NegativeDoc] | None = Field(
        default=None, description="Negative name -> the checks it must fail."
    )
    expectations: list[str | ExpectationEntry] | None = Field(
        default=None, description="Expectations: library names, or maps (inline, or `ref:` with overrides)."
    )
    notable_exits: list[int] | None = Field(default=None, description="Tool exit codes reported as findings.")
    state_setup: list[str] | None = Field(
        default=None, description="Commands seeding the treatment's state directory."
    )
    tags: list[str] | None = Field(
        default=None, description="Labels a matrix can select by (`scenarios: {tags: [...]}`)."
    )
    workdir: str | None = Field(
        default=None,
        description="Absolute path where the workspace appears for the agent, the checks and validate (e.g. /app).",
    )
    mounts: list[MountDoc] | None = Field(
        default=None, description="Other folders of the scenario at absolute paths."
    )
    environment: EnvironmentDoc | None = Field(
        default=None, description="Interpreter and packages the agent and the checks need."
    )
    env: dict[str, str] | None = Field(
        default=None, description="Environment variables of the agent and the checks (a Dockerfile's ENV)."
    )
    limits: ScenarioLimitsDoc | None = Field(
        default=None, description="Per-scenario limits, each within the matrix's."
    )
    meta: dict[str, Any] | None = Field(default=None, description="Free-form metadata.")
