"""Typed sections of grade.json (the grader's verdict), one model per section.

`harness.artifacts.records.Grade` holds these. Every field has a default so a grade written
before a section existed still reads, and every section is additive: a reader adds
fields, never renames them. Counts that could not be measured are None, never 0: a
real zero (an agent that never called the tool) must stay distinguishable from "no
evidence".
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class Section(BaseModel):
    """Base of grade sections: frozen, unknown keys refused."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class SubcommandUse(Section):
    """Invocations of one `<command> <subcommand>` pair."""

    invocations: int = Field(default=0, description="How often it was run.")
    failures: int = Field(default=0, description="Invocations that exited non-zero (or never exited).")
    exits: dict[str, int] = Field(
        default_factory=dict, description="Exit code (as a string; 'none' when killed) -> count."
    )
    output_bytes: int = Field(default=0, description="stdout+stderr bytes, summed.")
    est_output_tokens: int = Field(
        default=0, description="output_bytes / 4, rounded up: what the agent had to read."
    )


class NotableExit(Section):
    """An invocation whose exit the scenario marks notable (seed 000: 3 and 4)."""

    index: int = Field(description="Position in the trace (0-based).")
    argv: tuple[str, ...] = Field(description="The command line.")
    exit: int = Field(description="Its exit code.")


class ToolUse(Section):
    """What the agent ran of the traced tool(s)."""

    present: bool = Field(default=False, description="A trace was recorded (the cell traced something).")
    invocations: int = Field(default=0, description="Traced invocations in total.")
    failures: int = Field(default=0, description="Invocations that failed.")
    by_subcommand: dict[str, SubcommandUse] = Field(
        default_factory=dict, description="'<command> <subcommand>' (or '<command>' alone) -> use."
    )
    notable_exits: tuple[NotableExit, ...] = Field(
        default=(), description="Exits the scenario marks notable."
    )
    est_output_tokens: int = Field(
        default=0, description="Estimated output tokens of every traced command (4 bytes a token)."
    )
    serve_sessions: int = Field(default=0, description="Long-lived serve sessions seen in the trace.")
    serve_requests: int = Field(default=0, description="Lines the agent sent into serve sessions.")
    malformed_rows: int = Field(default=0, description="trace.jsonl rows the grader could not read.")


class Friction(Section):
    """Signs the agent struggled with the tool's surface."""

    usage_errors: int = Field(default=0, description="Invocations that exited with the usage-error code (2).")
    unknown_subcommands: int = Field(
        default=0, description="Usage errors naming a subcommand the tool does not have."
    )
    help_lookups: int = Field(default=0, description="Invocations asking for help (-h, --help, help).")
    retries_after_failure: int = Field(
        default=0, description="Invocations of the same subcommand right after it failed."
    )
    malformed_serve_requests: int = Field(
        default=0, description="Serve-session requests that were not valid JSON or were refused as invalid."
    )
    identical_repeats: int = Field(
        default=0, description="Invocations identical to the previous one with no write between them."
    )
    repeated_failures: int = Field(
        default=0, description="Longest run of one identical failing command line (1 = never repeated)."
    )


class ExpectationOutcome(Section):
    """One expectation's verdict."""

    id: str = Field(description="Expectation id.")
    outcome: Literal["pass", "fail", "unavailable"] = Field(
        description="unavailable when its evidence is missing (no transcript...)."
    )
    message: str = Field(default="", description="Why.")
    description: str = Field(default="", description="What the expectation asks, in words.")


class SnapshotVerdict(Section):
    """Strict validity of one snapshot by the scenario's authority."""

    index: int = Field(description="0-based snapshot index, in time order.")
    t: float = Field(description="Epoch seconds of the write.")
    path: str = Field(description="Workspace-relative file.")
    valid: bool | None = Field(description="None when validity could not be decided.")
    message: str = Field(default="", description="The authority's diagnostic.")


class Snapshots(Section):
    """The entry over time."""

    count: int = Field(default=0, description="Snapshots taken.")
    authority: str | None = Field(
        default=None, description="Check id (and authority) that judged validity; None: nothing to judge by."
    )
    verdicts: tuple[SnapshotVerdict, ...] = Field(default=(), description="Per snapshot.")
    first_valid: int | None = Field(default=None, description="Index of the first valid snapshot.")
    regressions: tuple[int, ...] = Field(
        default=(), description="Indices of snapshots that were invalid right after a valid one."
    )
    final_valid: bool | None = Field(default=None, description="Validity of the last snapshot.")


class Usage(Section):
    """Model usage: the gateway's account where one carried the model, else the adapter's usage.jsonl."""

    present: bool = Field(default=False, description="The account had turns.")
    source: Literal["gateway", "adapter"] | None = Field(
        default=None, description="Whose account the figures are: the gateway's or the adapter's (advisory)."
    )
    adapter_differs: tuple[str, ...] = Field(
        default=(), description="Where a gateway ran: totals on which the adapter's report differs from it."
    )
    turns: int | None = None
    input: int | None = None
    output: int | None = None
    cache_read: int | None = None
    cache_write: int | None = None
    reasoning: int | None = None
    total: int | None = Field(default=None, description="input + output + cache_read + cache_write.")
    peak_context: int | None = None
    context_limit: int | None = None
    peak_context_share: float | None = Field(default=None, description="peak_context / context_limit.")
    tokens_to_first_valid: int | None = Field(
        default=None, description="Total tokens of turns up to the first valid snapshot."
    )
    cost_usd: float | None = Field(
        default=None, description="From usage and the pinned price table; never the agent's own figure."
    )
    price_table: str | None = Field(
        default=None, description="Version of the price table used, or why no cost."
    )
    model: str | None = Field(default=None, description="Model the cost was priced as.")
    malformed_rows: int = Field(default=0, description="usage.jsonl rows that were not valid (never summed).")


class ContextLoad(Section):
    """What the agent loaded besides the prompt (context.json)."""

    present: bool = Field(default=False, description="The adapter reported its loaded context.")
    loaded: tuple[str, ...] = ()
    unexpected: tuple[str, ...] = Field(
        default=(),
        description="Loaded items other than the expected guide: advisory (the agent writes context.json), "
        "shown in the report, never a reason to exclude the run.",
    )
    error: str | None = Field(default=None, description="Why context.json could not be read (advisory too).")


class AuthorityVerdict(Section):
    """Validity of the work by one named authority, never collapsed with the others."""

    status: Literal["valid", "invalid", "unavailable"]
    checks: tuple[str, ...] = Field(default=(), description="Checks reporting for it.")
    diagnostics: str = Field(default="", description="Its messages, verbatim.")


class Disagreement(Section):
    """Two authorities that judged the same work differently: the reproducer for an owner issue."""

    accepts: str = Field(description="Authority that found the work valid.")
    rejects: str = Field(description="Authority that found it invalid.")
    direction: str = Field(description="'<accepts> accepts, <rejects> rejects'.")
    accepts_diagnostics: str = ""
    rejects_diagnostics: str = ""


class LintFinding(Section):
    """Findings of a lint-like check (a check counting findings)."""

    check: str
    severity: Literal["error", "warning"]
    count: int | None = Field(default=None, description="Findings, when the check counted them.")
    codes: tuple[str, ...] = Field(default=(), description="Rule codes, when known.")
