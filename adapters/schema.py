"""The files every adapter writes, as pydantic models (the grader reads them with these).

- `BENCH_USAGE`: JSONL of `UsageRow`, one per model turn (one API request that got an answer).
- `BENCH_TRANSCRIPT`: JSONL of `TranscriptEvent`, in the order the agent produced them.
- `BENCH_CONTEXT`: one `ContextReport` (`{"loaded": [...]}`).
- `BENCH_RUN_DIR/agent.json`: one `AgentInfo`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

SCHEMA_VERSION = 1
"""Version of the row and event schemas below; carried by `ContextReport` and `AgentInfo`."""


class UsageRow(BaseModel):
    """Token usage of one model turn, as the provider reported it to the agent."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    t: float
    """Epoch seconds of the turn (when the agent recorded the answer)."""
    input: int
    """Input tokens not served from a cache."""
    output: int
    """Output tokens, reasoning included."""
    cache_read: int = 0
    """Input tokens read from the provider's prompt cache."""
    cache_write: int = 0
    """Input tokens written to the provider's prompt cache."""
    reasoning: int = 0
    """Reasoning tokens (already part of `output`)."""
    context: int | None = None
    """Context used by the turn's prompt: input + cache_read + cache_write."""
    context_limit: int | None = None
    """The model's context window as the agent knows it, if it says."""
    model: str | None = None
    """Model id the answer came from."""


EventType = Literal["message", "tool_call", "tool_result", "error", "system"]


class TranscriptEvent(BaseModel):
    """One normalised agent event; every adapter maps its agent's own log onto this."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    t: float | None = None
    """Epoch seconds when the event was seen, if known."""
    type: EventType
    """message (text from user or assistant), tool_call, tool_result, error, or system
    (session start/end, retries, the agent's own notices)."""
    role: Literal["user", "assistant", "system", "tool"] | None = None
    """Who produced the event."""
    text: str | None = None
    """Message text, error message or system notice."""
    tool: str | None = None
    """Tool name (tool_call, tool_result)."""
    input: Any = None
    """Tool input as the agent sent it (usually an object; a shell command string for
    text-protocol agents)."""
    output: str | None = None
    """Tool output text (tool_result)."""
    exit_code: int | None = None
    """Exit code of a shell tool, when the agent reports one."""
    call_id: str | None = None
    """Id pairing a tool_call with its tool_result."""


class ContextItem(BaseModel):
    """Something the agent loaded into its context besides the prompt."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["instructions", "skill", "mcp_server", "plugin"]
    """What it is: an instruction file (CLAUDE.md, AGENTS.md, GEMINI.md...), a skill or guide,
    an MCP server, or a plugin."""
    name: str
    """Its name (file name for instructions, skill or server name)."""
    path: str | None = None
    """Where it came from, relative to the workspace when inside it."""
    source: Literal["treatment", "workspace", "agent"] = "treatment"
    """Who put it there: the cell's treatment (skill dir, MCP levels), the workspace itself,
    or the agent's own configuration."""


class ContextReport(BaseModel):
    """The `BENCH_CONTEXT` file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: int = SCHEMA_VERSION
    """Version of this schema."""
    loaded: list[ContextItem]
    """Everything loaded, in a stable order."""


class AgentInfo(BaseModel):
    """`BENCH_RUN_DIR/agent.json`: which agent, version and model ran."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: int = SCHEMA_VERSION
    """Version of this schema."""
    agent: str
    """Adapter name, e.g. `claude_code`."""
    version: str | None
    """The CLI's version as it reports it (`--version`), None if it would not say."""
    model: str
    """Model id the adapter asked for."""
    binary: str | None = None
    """Path of the CLI that ran."""
    exit_code: int | None = None
    """The CLI's own exit code."""
    infra_failure: str | None = None
    """Why the adapter exits 75 (provider or infrastructure failure), if it does."""
