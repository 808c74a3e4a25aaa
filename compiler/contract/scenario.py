"""A scenario as the runner and the grader need it: its files, checks, mounts and environment."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from compiler.contract.base import Frozen
from compiler.contract.parts import CheckSpec, Negative, Step

SANDBOX_RESERVED = (
    "/bin",
    "/dev",
    "/etc",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/proc",
    "/run",
    "/sbin",
    "/sys",
    "/tmp",
    "/usr",
)
"""Folders of the sandbox's own toolchain view: a scenario cannot show anything there."""


def within(path: str, folder: str) -> bool:
    """Whether a slash path is the folder or lies under it."""
    return path == folder or path.startswith(folder.rstrip("/") + "/")


class ScenarioMount(Frozen):
    """A folder of the scenario visible at an absolute path inside the sandbox."""

    path: str = Field(description="Absolute path inside the sandbox (e.g. /data, /tests).")
    source: str = Field(description="Project-relative folder it shows.")
    writable: bool = Field(
        default=False,
        description="A per-trial copy the agent may change; the checks see its final state (else read-only).",
    )
    hidden: bool = Field(
        default=False, description="Only the checks (and validate) see it, never the agent: hidden tests."
    )
    reference: str | None = Field(
        default=None,
        description="Project-relative overlay of a writable mount for the reference (the oracle applies it,"
        " validate lays it); never shown to agents.",
    )


class Environment(Frozen):
    """What a scenario needs installed, built once into a cached environment and used offline."""

    python: str | None = Field(
        default=None, description="Interpreter version (major.minor) the agent and the checks run with."
    )
    pip: tuple[str, ...] = Field(default=(), description="pip requirements installed into it.")
    apt: tuple[str, ...] = Field(default=(), description="Debian packages it provides.")


class ScenarioLimits(Frozen):
    """A scenario's own limits; the compiler keeps each within the matrix's."""

    timeout_s: float | None = Field(default=None, description="Agent wall-clock limit per session.")
    cpus: float | None = Field(default=None, description="CPUs the agent's process tree may use.")
    memory_mb: int | None = Field(default=None, description="Memory limit of the agent's process tree.")


class ScenarioJob(Frozen):
    """A scenario as the runner and grader need it."""

    id: str = Field(description="Scenario id (= folder name).")
    root: str = Field(description="Project-relative scenario folder.")
    family: str = Field(description="Family of related scenarios (they share a split).")
    language: str | None = Field(default=None, description="Language of the entry, one the project supports.")
    split: Literal["train", "test"] | None = Field(default=None, description="train or test.")
    source: str | None = Field(default=None, description="Provenance of the requirement.")
    reference_note: str | None = Field(default=None, description="Provenance of the reference solution.")
    seed: str = Field(description="Project-relative seed folder (the initial workspace).")
    reference: str | None = Field(
        default=None, description="Project-relative reference overlay; never shown to agents."
    )
    grader: str | None = Field(
        default=None,
        description="Project-relative folder of grader-only files overlaid after the agent is gone.",
    )
    negatives: tuple[Negative, ...] = Field(default=(), description="Negatives.")
    entry: tuple[str, ...] = Field(
        default=(), description="Workspace-relative entry files checked by authorities."
    )
    watch: tuple[str, ...] = Field(
        default=(), description="Workspace-relative files snapshotted after each write (defaults to entry)."
    )
    writable: tuple[str, ...] = Field(
        default=("**",), description="Globs the agent may change; any other change is an unsafe edit."
    )
    runtime_only: tuple[str, ...] = Field(
        default=(), description="Claims only a live runtime could verify: reported, never passed."
    )
    stability_risk: bool = Field(
        default=False, description="Finishing safely needs the tool's stability checks, not only validity."
    )
    prompt: str = Field(description="Rendered prompt (the first step's prompt for multi-step scenarios).")
    steps: tuple[Step, ...] = Field(
        default=(), description="Sessions of a multi-session scenario; empty for a single session."
    )
    checks: tuple[CheckSpec, ...] = Field(description="Checks, in declaration order.")
    expectations: tuple[dict[str, Any], ...] = Field(
        default=(), description="Declarative expectations (the grader defines their shape)."
    )
    notable_exits: tuple[int, ...] = Field(
        default=(3, 4), description="Tool exit codes reported as findings (candidate owner/environment gaps)."
    )
    forbid_words: tuple[str, ...] = Field(default=(), description="Words the prompt must not contain.")
    state_setup: tuple[str, ...] = Field(
        default=(), description="Scenario-level commands that seed the treatment's state directory."
    )
    judges: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="Provider configurations of the LLM judges this scenario's `judge` checks name (from the project's `judges:`).",
    )
    tags: tuple[str, ...] = Field(default=(), description="Labels a matrix selects scenarios by.")
    workdir: str | None = Field(
        default=None,
        description="Absolute path where the workspace appears in the sandbox (agent, checks, validate); None: its own path.",
    )
    mounts: tuple[ScenarioMount, ...] = Field(
        default=(), description="Other folders of the scenario at absolute paths in the sandbox."
    )
    environment: Environment | None = Field(
        default=None, description="Interpreter and packages of the agent and the checks."
    )
    env: dict[str, str] = Field(
        default_factory=dict, description="Environment variables of the agent and the checks."
    )
    limits: ScenarioLimits | None = Field(
        default=None, description="The scenario's own limits (the job's `limits` already hold them)."
    )
