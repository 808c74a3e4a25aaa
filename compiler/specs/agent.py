"""`kind: agent` — a named adapter plus its arguments."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from compiler.specs.base import SpecModel


class AgentDoc(SpecModel):
    """`specs/agents/<id>.yaml`."""

    kind: Literal["agent"] = Field(description="Always `agent`.")
    id: str = Field(description="Agent id (slug), unique in the project.")
    extends: str | None = Field(default=None, description="Another agent id to inherit from (deep-merge).")
    description: str | None = Field(default=None, description="What the agent is.")
    adapter: str | None = Field(
        default=None, description="Built-in adapter short name, a dotted path, or `command`."
    )
    command: str | None = Field(
        default=None, description="Shell command when adapter is `command` (prompt on stdin)."
    )
    model: str | None = Field(default=None, description="Model id recorded in run.json.")
    version: str | None = Field(default=None, description="Agent version label.")
    args: dict[str, Any] | None = Field(default=None, description="Adapter arguments.")
    env: dict[str, str] | None = Field(default=None, description="Extra environment for the adapter process.")
    requires: list[str] | None = Field(
        default=None, description="Executables a worker must have to run this agent."
    )
    install: dict[str, str] | None = Field(
        default=None, description="How to install the agent, e.g. {pip: 'aider-chat==0.86.2'}."
    )
    runnable: bool | None = Field(
        default=None,
        description="false when the agent cannot run unattended; a matrix selecting it is an error.",
    )
    reason: str | None = Field(default=None, description="Why the agent is not runnable.")
    sanity: Literal["pass", "fail"] | None = Field(
        default=None,
        description="A sanity agent that bounds the pipeline instead of measuring a tool: `pass` (an oracle: "
        "every run must pass) or `fail` (a no-op: every run must fail). Kept out of uplift, headroom and "
        "`assay plan`; a run that breaks the expectation is a report warning.",
    )
    meta: dict[str, Any] | None = Field(default=None, description="Free-form metadata.")
