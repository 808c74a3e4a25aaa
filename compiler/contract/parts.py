"""What a cell, an agent and a check are in a job: the parts the compiler resolves from the specs."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from compiler.contract.base import Frozen


class Canaries(Frozen):
    """Commands that prove a level's provisions before the agent starts."""

    absent: tuple[str, ...] = Field(
        default=(), description="Command names that must NOT be found on the agent's PATH."
    )
    must_fail: tuple[str, ...] = Field(
        default=(),
        description="Shell commands that must exit non-zero in the agent's environment (e.g. a network probe under network: off).",
    )
    must_pass: tuple[str, ...] = Field(
        default=(),
        description="Shell commands that must exit zero in the agent's environment (e.g. the tool answers --version).",
    )
    network: Literal["off", "on"] | None = Field(
        default=None,
        description="Prove the network against a listener the harness opens on the host's loopback: `off`, nothing reaches it; `on`, it answers (through the sandbox's way out).",
    )


class McpServer(Frozen):
    """An MCP server a level provides; the adapter translates it for its agent."""

    command: tuple[str, ...] = Field(description="argv that starts the server (stdio transport).")
    env: dict[str, str] = Field(default_factory=dict, description="Extra environment for the server process.")


class Provisions(Frozen):
    """What a cell provides, merged over its levels in factor order (later levels win)."""

    path: tuple[str, ...] = Field(
        default=(),
        description="Project-relative folders whose executables go on PATH through the tracing shim.",
    )
    trace: tuple[str, ...] = Field(
        default=(), description="Command names whose invocations are traced into trace.jsonl."
    )
    serve: tuple[str, ...] = Field(
        default=(),
        description="Subcommands that start a long-lived session whose stdin/stdout is teed line by line into the trace.",
    )
    files: dict[str, str] = Field(
        default_factory=dict,
        description="Workspace-relative destination -> project-relative source file copied into the workspace.",
    )
    home_files: dict[str, str] = Field(
        default_factory=dict,
        description="HOME-relative destination -> project-relative source file copied into the fresh HOME.",
    )
    links: dict[str, str] = Field(
        default_factory=dict,
        description="Workspace-relative name -> project-relative folder linked read-only (never counted as an edit).",
    )
    skill_dir: str | None = Field(
        default=None,
        description="Project-relative guide/skill folder handed to the adapter as BENCH_SKILL_DIR.",
    )
    env: dict[str, str] = Field(
        default_factory=dict, description="Extra environment variables for the agent."
    )
    network: bool = Field(
        default=False, description="Whether the agent may reach the network beyond its model endpoint."
    )
    setup: tuple[str, ...] = Field(
        default=(),
        description="Shell commands run in the workspace before the agent (not traced, not counted as edits).",
    )
    state_dir: bool = Field(
        default=False,
        description="Whether the treatment keeps a state directory that persists across the steps of a run.",
    )
    state_setup: tuple[str, ...] = Field(
        default=(),
        description="Shell commands that seed the state directory ($BENCH_STATE_DIR); they must write only there.",
    )
    mcp_servers: dict[str, McpServer] = Field(default_factory=dict, description="MCP servers by name.")
    adapter: dict[str, Any] = Field(
        default_factory=dict, description="Options the adapter must translate for its agent (e.g. web: true)."
    )
    canaries: Canaries = Field(default_factory=Canaries, description="Canaries run before the agent.")


class Cell(Frozen):
    """One combination of levels, e.g. bin/none/off."""

    name: str = Field(description="Levels joined by '/' in factor order.")
    levels: dict[str, str] = Field(description="Factor -> level, in factor order.")
    control: bool = Field(default=False, description="True for the project's control cell.")
    provisions: Provisions = Field(
        default_factory=Provisions, description="Merged provisions of the cell's levels."
    )


class AgentSpec(Frozen):
    """A named adapter plus its arguments."""

    id: str = Field(description="Agent id (slug), unique in the project.")
    adapter: str = Field(
        description="Built-in adapter short name, a dotted path 'pkg.mod', or 'command' for a shell command."
    )
    command: str | None = Field(
        default=None, description="Shell command for adapter 'command' (seed 000's --agent-cmd)."
    )
    args: dict[str, Any] = Field(
        default_factory=dict, description="Adapter arguments, passed as JSON in BENCH_AGENT_ARGS."
    )
    model: str | None = Field(default=None, description="Model id recorded in run.json (and passed in args).")
    version: str | None = Field(default=None, description="Agent version label recorded in run.json.")
    env: dict[str, str] = Field(
        default_factory=dict, description="Extra environment for the adapter process."
    )
    requires: tuple[str, ...] = Field(
        default=(), description="Executables/resources a worker must have to run this agent."
    )
    host_files: dict[str, str] = Field(
        default_factory=dict,
        description="Host files the command names (absolute path -> sha256, or `directory`), mounted read-only at the same path in the sandbox.",
    )
    sanity: Literal["pass", "fail"] | None = Field(
        default=None,
        description="A sanity agent (oracle: pass, no-op: fail): how the report reads its runs, not what runs "
        "(outside the job hash).",
    )


class CheckSpec(Frozen):
    """One deterministic check, resolved to a built-in kind with concrete parameters."""

    id: str = Field(description="Check id, unique within its scenario.")
    kind: str = Field(
        description="Built-in check kind the engine runs (user kinds are resolved to 'command')."
    )
    layer: str = Field(
        default="agent", description="What a failure implicates: 'agent' or a named product layer."
    )
    authority: str | None = Field(
        default=None, description="Named authority whose validity this check reports, if any."
    )
    severity: Literal["error", "warning"] = Field(
        default="error", description="Findings of an error-severity lint check make a passing run not usable."
    )
    timeout_s: float = Field(default=60.0, description="Wall-clock limit for the check.")
    source_kind: str | None = Field(
        default=None, description="The user kind this check was declared as, if any."
    )
    params: dict[str, Any] = Field(
        default_factory=dict, description="Kind-specific parameters (validated at compile time)."
    )


class Negative(Frozen):
    """A named overlay that must fail exactly the checks it names."""

    name: str = Field(description="Negative name (folder name under negatives/).")
    fails: tuple[str, ...] = Field(description="Ids of the checks the overlay must fail, and only those.")
    dir: str | None = Field(default=None, description="Project-relative overlay folder.")
    patch: str | None = Field(
        default=None, description="Project-relative unified diff applied instead of (or after) the overlay."
    )
    base: Literal["reference", "seed"] = Field(
        default="reference",
        description="What the overlay is laid on: seed + reference (assay's form) or the seed alone (seed 000's scenario.json, where negatives are overlays like the reference).",
    )


class Step(Frozen):
    """One agent session of a multi-session scenario."""

    name: str = Field(description="Step label used in artifacts.")
    prompt: str = Field(description="Rendered prompt for this session.")
    evidence: dict[str, str] = Field(
        default_factory=dict,
        description="Workspace-relative path -> project-relative source, present only during this step.",
    )
    fresh_repo: bool = Field(
        default=False, description="Reset the working tree to the cell's starting state before this step."
    )
