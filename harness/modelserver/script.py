"""Scripts for the scripted model server: the YAML format and step selection.

A script is a list of steps the "model" plays back, one step per agent turn::

    model: scripted-model
    step_mode: history            # history | echo | counter
    tools_required: true          # a request without tools is a side request
    side_text: '{"title": "Scripted session"}'
    side_if_system_contains: ["Git commit messages"]
    steps:
      - text: "I'll create hello.txt."
        tool_calls:
          - {name: Bash, arguments: {command: "printf 'hi\\n' > hello.txt"}}
      - error: {status: 529, type: overloaded_error, message: overloaded, times: 1}
        text: "Done."
      - {text: "All done.", delay: 0.5}

`{{cwd}}` in any text or argument is replaced by the working directory the agent states in
its request (Claude Code's environment block, Codex's `<cwd>`), so absolute paths can be
scripted without knowing the workspace in advance.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.artifacts.store import read_plain


class ToolCall(BaseModel):
    """One tool call the model makes in a step."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    """Tool name as the agent declared it (e.g. `Bash`, `exec_command`, `bash`)."""
    arguments: dict[str, Any] | str = Field(default_factory=dict)
    """Arguments: an object (sent as JSON) or a raw JSON string sent verbatim."""
    namespace: str | None = None
    """Responses API only: the tool namespace (Codex puts MCP server `x`'s tools in `mcp__x`)."""


class ErrorSpec(BaseModel):
    """An HTTP error the server returns instead of the step's reply."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    status: int = 500
    """HTTP status: 429, 500, 529, 401, ..."""
    type: str = "api_error"
    """Provider error type, e.g. `overloaded_error`, `rate_limit_error`."""
    message: str = "scripted error"
    """Human-readable error message."""
    times: int | None = None
    """Serve the error this many times, then play the step normally; None = always."""
    retry_after: float | None = None
    """Value of a `retry-after` header, in seconds, if set."""


class Step(BaseModel):
    """One model turn."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str = ""
    """Assistant text of the turn."""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    """Tool calls of the turn; none means the turn ends the agent's loop."""
    error: ErrorSpec | None = None
    """Answer with this error (see `ErrorSpec.times`) instead of the reply."""
    delay: float = 0.0
    """Seconds to wait before answering."""


class Script(BaseModel):
    """A whole script."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = "scripted-model"
    """Model id reported in responses."""
    step_mode: Literal["history", "echo", "counter"] = "history"
    """How the step index is derived: assistant turns in the history (stateless), assistant
    messages echoing scripted texts (stateless; for agents that pad their history, e.g. aider),
    or a per-process counter reset by `GET /_scripted/reset`."""
    tools_required: bool = True
    """When true, a request that declares no tools is a side request (title generators...)."""
    side_text: str = '{"title": "Scripted session"}'
    """Reply to side requests; they never consume a step."""
    side_if_system_contains: list[str] = Field(default_factory=list)
    """A request whose system prompt contains one of these markers is a side request."""
    exhausted_text: str = "Script finished."
    """Reply (without tool calls) once every step has been played."""
    context_limit: int = 200000
    """Context window reported by `GET /v1/models` (informational)."""
    steps: list[Step] = Field(default_factory=list)
    """The steps, in order."""


def load_script(path: Path) -> Script:
    """Read a YAML (or JSON) script file."""
    raw = read_plain(path) or {}
    return Script.model_validate(raw)


ECHO_PREFIX = 60


def echo_index(script: Script, assistant_texts: list[str]) -> int:
    """Number of assistant messages that contain the opening of some scripted step's text."""
    prefixes = [s.text[:ECHO_PREFIX].strip() for s in script.steps if s.text.strip()]
    return sum(1 for text in assistant_texts if any(p and p in text for p in prefixes))


def substitute(value: Any, cwd: str | None) -> Any:
    """Replace `{{cwd}}` in strings nested in `value`."""
    if cwd is None:
        return value
    if isinstance(value, str):
        return value.replace("{{cwd}}", cwd)
    if isinstance(value, dict):
        return {k: substitute(v, cwd) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, cwd) for v in value]
    return value
