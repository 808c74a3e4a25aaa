"""`kind: project` — factors and levels, constraints, the control cell, defaults."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from compiler.contract import LIMITS_OFF, Limits, Options
from compiler.specs.base import SpecModel, partial

LimitsDoc = partial(Limits, "LimitsDoc", off=LIMITS_OFF)
OptionsDoc = partial(Options, "OptionsDoc")


class CanariesDoc(SpecModel):
    """Canaries a level declares (merged into the cell's canaries)."""

    absent: list[str] = Field(
        default_factory=list, description="Command names that must not be on the agent's PATH."
    )
    must_fail: list[str] = Field(
        default_factory=list, description="Shell commands that must exit non-zero in the agent's environment."
    )
    must_pass: list[str] = Field(
        default_factory=list, description="Shell commands that must exit zero in the agent's environment."
    )
    network: Literal["off", "on"] | None = Field(
        default=None,
        description="`off`: nothing may reach a listener the harness opens on the host's loopback; `on`: it must answer.",
    )


class McpServerDoc(SpecModel):
    """An MCP server a level provides."""

    command: list[str] = Field(description="argv that starts the server (stdio transport).")
    env: dict[str, str] = Field(default_factory=dict, description="Extra environment for the server.")


class LevelDoc(SpecModel):
    """One level of a factor: what it provides and which canaries prove it."""

    extends: str | None = Field(
        default=None, description="Another level of the same factor to inherit from (deep-merge)."
    )
    description: str | None = Field(default=None, description="What the level means, for reports.")
    path: list[str] | None = Field(
        default=None,
        description="Folders (relative to the project file) put on PATH through the tracing shim.",
    )
    trace: list[str] | None = Field(default=None, description="Command names whose invocations are traced.")
    serve: list[str] | None = Field(
        default=None, description="Subcommands that start a long-lived session teed into the trace."
    )
    files: dict[str, str] | None = Field(
        default=None, description="Workspace destination -> source file copied in."
    )
    home_files: dict[str, str] | None = Field(
        default=None, description="HOME destination -> source file copied into the fresh HOME."
    )
    links: dict[str, str] | None = Field(
        default=None, description="Workspace name -> folder linked read-only."
    )
    skill_dir: str | None = Field(
        default=None, description="Guide folder handed to the adapter as BENCH_SKILL_DIR."
    )
    env: dict[str, str] | None = Field(default=None, description="Extra environment variables for the agent.")
    network: bool | None = Field(default=None, description="Whether the agent may reach the network.")
    setup: list[str] | None = Field(
        default=None, description="Shell commands run in the workspace before the agent."
    )
    state_dir: bool | None = Field(
        default=None, description="Whether the treatment keeps a state directory across steps."
    )
    state_setup: list[str] | None = Field(
        default=None, description="Commands that seed $BENCH_STATE_DIR; they write only there."
    )
    mcp_servers: dict[str, McpServerDoc] | None = Field(default=None, description="MCP servers by name.")
    adapter: dict[str, Any] | None = Field(
        default=None, description="Options the adapter translates for its agent (e.g. web: true)."
    )
    canaries: CanariesDoc | None = Field(
        default=None, description="Canaries that prove the level before the agent starts."
    )
    forbid_words: list[str] | None = Field(
        default=None, description="Words a prompt run under this level must not contain."
    )
    meta: dict[str, Any] | None = Field(default=None, description="Free-form metadata.")


class ConstraintDoc(SpecModel):
    """A rule over cells: where `when` matches, `require` must match too."""

    when: dict[str, str | list[str]] = Field(
        description="Factor (or `agent`) -> level or list of levels that triggers the rule."
    )
    require: dict[str, str | list[str]] = Field(
        description="Factor (or `agent`) -> level or levels the cell must then have."
    )
    message: str | None = Field(
        default=None, description="Why; shown when the rule prunes a cell or rejects an include."
    )


class AuthorityDoc(SpecModel):
    """A named source of validity."""

    command: str | None = Field(default=None, description="Command that reports the authority's version.")
    description: str | None = Field(default=None, description="What the authority is.")


class JudgeDoc(SpecModel):
    """An LLM judge provider for `judge` checks; off unless the project names one."""

    provider: Literal["anthropic", "openai"] = Field(
        description="Wire protocol: Anthropic Messages or OpenAI-compatible Chat Completions."
    )
    model: str = Field(description="Model id sent to the provider.")
    base_url: str = Field(
        description="Endpoint base URL of the provider (required: assay names no address off this machine)."
    )
    api_key_env: str | None = Field(
        default=None,
        description="Environment variable holding the API key (read by the grader, never put in a job).",
    )
    api_key: str | None = Field(default=None, description="A literal key, for local scripted servers only.")
    max_tokens: int | None = Field(default=None, ge=1, description="Answer length limit.")
    timeout_s: float | None = Field(default=None, gt=0, description="Per-request timeout.")
    retries: int | None = Field(
        default=None, ge=0, description="Retries on 408/429/5xx/529 and connection errors."
    )
    extra_headers: dict[str, str] | None = Field(default=None, description="Extra HTTP headers.")


class DefaultsDoc(SpecModel):
    """Project-wide defaults of every matrix."""

    trials: int | None = Field(default=None, ge=1, description="Trials per agent x cell x scenario.")
    parallel: int | None = Field(default=None, ge=1, description="Concurrent trials.")
    max_jobs: int | None = Field(default=None, ge=0, description="Cap on a matrix's trial count.")
    limits: LimitsDoc | None = Field(default=None, description="Per-trial limits.")  # type: ignore[valid-type]
    options: OptionsDoc | None = Field(default=None, description="Run options.")  # type: ignore[valid-type]


class ProjectDoc(SpecModel):
    """`specs/project.yaml`: the conditions of the benchmark."""

    kind: Literal["project"] = Field(description="Always `project`.")
    spec_version: Literal[1] = Field(description="Version of the spec language (1).")
    name: str = Field(description="Project name.")
    description: str | None = Field(default=None, description="What the project benchmarks.")
    languages: list[str] = Field(
        default_factory=list, description="Languages the project declares supported."
    )
    forbid_words: list[str] = Field(default_factory=list, description="Words no prompt may contain.")
    authorities: dict[str, AuthorityDoc | None] = Field(
        default_factory=dict, description="Named sources of validity."
    )
    factors: dict[str, dict[str, LevelDoc | None]] = Field(
        description="Factor -> level -> provisions; factor order names cells."
    )
    constraints: list[ConstraintDoc] = Field(default_factory=list, description="Rules that prune cells.")
    control: str = Field(description="The control cell, levels joined by '/'.")
    defaults: DefaultsDoc | None = Field(default=None, description="Defaults of every matrix.")
    judges: dict[str, JudgeDoc] = Field(
        default_factory=dict,
        description="LLM judges by name; a `judge` check names one with `model:` (default `default`).",
    )
    meta: dict[str, Any] | None = Field(default=None, description="Free-form metadata.")
