"""The run-time artifact contract: run.json (runner) and grade.json (grader).

A run directory holds one trial. `run.json` is written last and atomically by the
runner, so its presence means the trial finished (or failed as data); `grade.json`
is written beside it by the grader and may be rewritten by a regrade. Metrics are
split by owner as in seed 002: the runner records what only the run knows, the
grader derives the rest, and `merge_metrics` recombines them field by field so a
real zero stays zero.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.artifacts.grade_sections import (
    AuthorityVerdict,
    ContextLoad,
    Disagreement,
    ExpectationOutcome,
    Friction,
    LintFinding,
    Snapshots,
    ToolUse,
    Usage,
)
from harness.artifacts.names import GRADE_FILE, RUN_FILE
from harness.artifacts.sandbox_sections import Protections, TreeReport
from harness.artifacts.store import FutureSchemaError, read_record

RUN_SCHEMA = 1
GRADE_SCHEMA = 1


class Record(BaseModel):
    """Base of run-time records: unknown keys refused so a future writer is noticed."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class RunStatus(StrEnum):
    """How a run counts in aggregation."""

    GRADED = "graded"
    FAILED_TO_RUN = "failed_to_run"
    UNGRADEABLE = "ungradeable"


class RunnerMetrics(Record):
    """The runner's half of a run's measurements (from the agent process)."""

    turns: int | None = Field(default=None, description="Model turns (rows of usage.jsonl).")
    input_tokens: int | None = Field(default=None, description="Input tokens, uncached.")
    output_tokens: int | None = Field(default=None, description="Output tokens.")
    cache_read_tokens: int | None = Field(default=None, description="Cache-read input tokens.")
    cache_write_tokens: int | None = Field(default=None, description="Cache-write input tokens.")
    reasoning_tokens: int | None = Field(
        default=None, description="Reasoning tokens (subset of output where reported)."
    )
    peak_context: int | None = Field(default=None, description="Largest context of any turn.")
    context_limit: int | None = Field(default=None, description="The model's context limit, when reported.")
    cost_usd: float | None = Field(
        default=None,
        description="Cost from usage and the pinned price table (the grader's); never the adapter's own figure.",
    )
    duration_s: float | None = Field(default=None, description="Agent wall-clock seconds, summed over steps.")


class UsageCheck(Record):
    """The adapter's usage report set against the gateway's own account of the same trial.

    Where a gateway carried the model, its account is the one the metrics use: the adapter
    runs in the sandbox and can write any figure into usage.jsonl.
    """

    source: Literal["gateway"] = Field(description="The account the run's metrics come from.")
    gateway: dict[str, int] = Field(description="The gateway's totals: turns and tokens by kind.")
    adapter: dict[str, int] = Field(description="The adapter's totals over its valid usage rows.")
    differs: tuple[str, ...] = Field(
        default=(), description="Totals where the adapter's report differs from the gateway's."
    )
    adapter_malformed: int = Field(default=0, description="Usage rows of the adapter that were malformed.")


class TraceChannel(Record):
    """How tool-use rows reached trace.jsonl: only through the collector (harness.trial.tracing)."""

    launches: int = Field(default=0, description="Sandboxed commands started under the tool runner.")
    registered: int = Field(default=0, description="Runners that registered with their one-time token.")
    unguarded: int = Field(
        default=0, description="Runners that could not make themselves undumpable (rows then advisory)."
    )
    refused: int = Field(
        default=0, description="Registrations refused: a token never armed or already used (forgery)."
    )
    rows: int = Field(default=0, description="Rows of the agent's tool use received (trace.jsonl).")
    late: int = Field(
        default=0, description="Commands whose runner had not hung up in time (rows may be missing)."
    )


class Omitted(Record):
    """A changed path diff.patch could not carry."""

    path: str = Field(description="Workspace-relative path, control and non-UTF-8 bytes escaped.")
    why: str = Field(description="Why: an odd file (fifo, socket, device), too long, or refused by git.")


class CanaryResult(Record):
    """One canary's outcome."""

    kind: Literal["absent", "must_fail", "must_pass", "network"] = Field(description="Which canary.")
    command: str = Field(description="What was run or looked up.")
    ok: bool = Field(description="True when the canary held.")
    detail: str = Field(default="", description="Why it failed, or what it printed.")


AgentEndCause = Literal["timeout", "output", "limit", "exit", "claimed_infra", "blocked"]
"""How the agent's own doing ended a session (`AgentEnd.cause`)."""


class AgentEnd(Record):
    """Why a session ended early or badly by the agent's own doing: never the harness's, so the run
    stays in every rate and is graded on what the agent left (a multi-step run as it stands when
    that session ended: the later steps never run)."""

    cause: AgentEndCause = Field(
        description="timeout (its wall-clock limit), output (its output cap), limit (a sandbox limit "
        "stopped it: memory, pids, cpu, file_size, workspace, outbox), exit (a non-zero exit, or a "
        "signal), claimed_infra (exit 75 after the retries while the harness saw no provider or "
        "infrastructure failure), blocked (what it left in its tree kept the next session of a "
        "multi-step run from starting: a file or link where that step's evidence goes)."
    )
    detail: str = Field(description="What happened, in words.")
    step: str | None = Field(
        default=None, description="The step whose session ended so, in a multi-step run: `i/n (name)`."
    )


class StepRecord(Record):
    """One agent session of a multi-step run."""

    name: str = Field(description="Step label.")
    started_at: float = Field(description="Epoch seconds.")
    ended_at: float = Field(description="Epoch seconds.")
    exit_code: int | None = Field(description="Adapter exit code; None when it never ran to an exit.")
    error: str | None = Field(default=None, description="Why the step failed to run (a harness-side cause).")
    agent_end: AgentEnd | None = Field(
        default=None, description="How the agent's own doing ended the session, when it did."
    )
    metrics: RunnerMetrics = Field(
        default_factory=RunnerMetrics, description="Runner metrics of this session."
    )


class RunRecord(Record):
    """run.json: what the runner knows about one trial."""

    schema_version: int = Field(default=RUN_SCHEMA, description="Record version.")
    job_id: str = Field(description="The job id.")
    job_hash: str = Field(description="The job's content hash (resume key with the trial).")
    matrix: str
    scenario: str
    cell: str
    levels: dict[str, str] = Field(description="Factor -> level.")
    control: bool = Field(default=False, description="True when the cell is the project's control.")
    agent: str = Field(description="Agent id.")
    sanity: Literal["pass", "fail"] | None = Field(
        default=None,
        description="The agent is a sanity bound (oracle: every run should pass, no-op: every run should fail), not a measurement.",
    )
    trial: int
    version: str | None = Field(default=None, description="Tool version label in a version comparison.")
    model: str | None = Field(default=None, description="Model id.")
    agent_version: str | None = Field(default=None, description="Installed agent CLI version.")
    agent_command: str = Field(default="", description="What was executed as the adapter.")
    exit_code: int | None = Field(
        default=None, description="Final adapter exit code; None if it never exited on its own."
    )
    timed_out: bool = Field(default=False, description="The agent hit its wall-clock limit.")
    limits_hit: tuple[str, ...] = Field(
        default=(),
        description="Limits that were hit (timeout, output, memory, pids, file_size, cpu, workspace, outbox).",
    )
    limits_applied: dict[str, str] = Field(
        default_factory=dict,
        description='Each limit as it applied: "4096 MB (cgroup)", "off" (the spec wrote none), or "... (not enforced here)".',
    )
    started_at: float = Field(description="Epoch seconds.")
    ended_at: float = Field(description="Epoch seconds.")
    environment: dict[str, str] = Field(
        default_factory=dict, description="OS, Python, assay, tool version, isolation used."
    )
    isolation: str = Field(default="none", description="Isolation plug-in that ran the agent.")
    infra_retries: int = Field(default=0, description="Retries after exit 75.")
    canaries: tuple[CanaryResult, ...] = Field(default=(), description="Canary outcomes.")
    invalid: str | None = Field(
        default=None,
        description="Why the run is excluded from rates: what the harness itself checked failed (a canary, "
        "an unenforceable `network: off`).",
    )
    error: str | None = Field(
        default=None,
        description="Why the run failed to run, a harness-side cause (a crash, a capture failure, an adapter "
        "the harness's launch check found cannot start, a provider failure the gateway saw); not a graded failure.",
    )
    agent_end: AgentEnd | None = Field(
        default=None,
        description="How the agent's own doing ended the run (a timeout, a limit, a non-zero exit, an "
        "unproven exit 75, a failed earlier session): graded on what it left, never excluded.",
    )
    traceback: str | None = Field(default=None, description="Harness traceback for a failed run.")
    interrupted: bool = Field(default=False, description="Stopped by Ctrl-C; rerun on resume.")
    concurrent: bool = Field(
        default=False,
        description="Shared the machine with sibling conditions; wall-clock not comparable to serial runs.",
    )
    unsafe_edits: tuple[str, ...] = Field(
        default=(), description="Files changed outside writable (the first 200, printable)."
    )
    unsafe_edits_count: int = Field(default=0, description="How many files changed outside writable.")
    diff_omitted: tuple[Omitted, ...] = Field(
        default=(), description="Changed paths diff.patch leaves out, with why (the first 200)."
    )
    diff_omitted_count: int = Field(default=0, description="How many changed paths diff.patch leaves out.")
    metrics: RunnerMetrics = Field(
        default_factory=RunnerMetrics, description="The runner's half of the metrics."
    )
    steps: tuple[StepRecord, ...] = Field(default=(), description="Per-step records of a multi-step run.")
    trace_channel: TraceChannel | None = Field(
        default=None, description="How tool-use rows were collected, when the cell traces a tool."
    )
    usage_check: UsageCheck | None = Field(
        default=None, description="Adapter's usage against the gateway's, when a gateway carried the model."
    )
    protections: Protections | None = Field(
        default=None,
        description="Which sandbox protections held (measured on this machine); None: the trial never started one.",
    )
    sandbox_trees: dict[str, TreeReport] = Field(
        default_factory=dict,
        description="Per writable folder (workspace, home, tmp, state, outbox): unsafe mode bits stripped and odd files found.",
    )
    extra: dict[str, Any] = Field(
        default_factory=dict, description="Free-form runner details (paths of optional artifacts, notes)."
    )


class CaseOutcome(Record):
    """One test of a check that runs a test suite (`pytest`): its own verdict."""

    id: str = Field(
        description="The test's id, as pytest names it (`test_file.py::Class::test_name[param]`)."
    )
    outcome: Literal["pass", "fail", "skip"] = Field(
        description="pass, fail (a failure or an error in the test or its setup), or skip."
    )
    message: str = Field(default="", description="The failure's message (truncated), or why it was skipped.")
    duration_s: float = Field(default=0.0, description="Seconds the test took.")


class CheckOutcome(Record):
    """One check's verdict."""

    id: str
    kind: str
    layer: str
    outcome: Literal["pass", "fail", "error", "unavailable"]
    message: str = ""
    authority: str | None = None
    duration_s: float = 0.0
    severity: Literal["error", "warning"] = "error"
    count: int | None = Field(
        default=None, description="Findings or matches counted by the check, when it counts."
    )
    details: dict[str, Any] = Field(
        default_factory=dict, description="Kind-specific evidence, e.g. a judge's verdict verbatim."
    )
    tests: tuple[CaseOutcome, ...] = Field(
        default=(), description="One outcome per test, for a check that runs a test suite (`pytest`)."
    )


class Grade(Record):
    """grade.json: the grader's verdict on one run (owned by the grader; sections are additive).

    The verdict (`passed`, `usable`), what it rests on (`checks`), which grader made it
    (`grader_hash`) and when (`graded_at`) have no default: every grade assay ever wrote holds
    them, so a grade.json without one is damaged, and reads as no grade (regraded), never as a
    failed run."""

    schema_version: int = Field(default=GRADE_SCHEMA, description="Record version.")
    status: RunStatus
    passed: bool = Field(description="Every check passed (meaningful only when graded).")
    usable: bool = Field(description="Passed with no error-severity lint finding.")
    error: str | None = Field(default=None, description="Why the run is failed_to_run or ungradeable.")
    invalid: str | None = Field(
        default=None,
        description="Why the run is excluded from rates: the runner's reason (a canary, an unenforceable "
        "`network: off`); never what the agent wrote (context.json is advisory: `context`).",
    )
    agent_end: AgentEnd | None = Field(
        default=None,
        description="How the agent's own doing ended the run (from run.json): the run is graded on what "
        "it left and counts as not passed unless its checks pass.",
    )
    checks: tuple[CheckOutcome, ...] = Field(description="Every check's verdict (none when not graded).")
    failed_layers: tuple[str, ...] = ()
    grader_hash: str = Field(
        description="Hash of grader code version + checks + grader files (empty when no job was read)."
    )
    graded_at: float = Field(description="Epoch seconds.")
    metrics: dict[str, float] = Field(
        default_factory=dict, description="The grader's half of the metrics (see merge_metrics)."
    )
    details: dict[str, Any] = Field(default_factory=dict, description="Free-form grader notes.")
    authorities: dict[str, AuthorityVerdict] = Field(
        default_factory=dict, description="Validity per named authority, never collapsed."
    )
    disagreement: tuple[Disagreement, ...] = Field(
        default=(), description="Authorities that disagree, with direction and both diagnostics."
    )
    diagnostics: tuple[str, ...] = Field(
        default=(), description="Messages of failed and errored checks, verbatim."
    )
    lint_findings: tuple[LintFinding, ...] = Field(
        default=(), description="Findings of counting (lint-like) checks."
    )
    unsafe_edits: tuple[str, ...] = Field(
        default=(), description="Files changed outside writable (from the run)."
    )
    unverified_runtime_claims: tuple[str, ...] = Field(
        default=(), description="The scenario's runtime_only claims: reported, never passed."
    )
    tool_use: ToolUse = Field(default_factory=ToolUse, description="Traced tool invocations.")
    friction: Friction = Field(
        default_factory=Friction, description="Usage errors, help lookups, retries, repeats."
    )
    expectations: tuple[ExpectationOutcome, ...] = Field(default=(), description="Expectation verdicts.")
    snapshots: Snapshots = Field(default_factory=Snapshots, description="Validity of the entry over time.")
    usage: Usage = Field(default_factory=Usage, description="Model usage and cost.")
    context: ContextLoad = Field(default_factory=ContextLoad, description="Loaded context.")
    infra_retries: int = Field(default=0, description="Retries after exit 75 (from the run).")


def read_run(run_dir: Path) -> RunRecord:
    """Read a run directory's run.json."""
    return read_record(run_dir / RUN_FILE, RunRecord, RUN_SCHEMA)


def read_grade(run_dir: Path) -> Grade | None:
    """Read a run directory's grade.json, or None when it is not graded yet.

    A truncated or garbage grade.json reads as no grade at all, so the next grading repairs it
    (a newer assay's grade is still refused: FutureSchemaError).
    """
    try:
        return read_record(run_dir / GRADE_FILE, Grade, GRADE_SCHEMA)
    except FileNotFoundError:
        return None
    except FutureSchemaError:
        raise
    except (OSError, ValueError):
        return None


def merge_metrics(runner: RunnerMetrics, grader: dict[str, float]) -> dict[str, float | None]:
    """Recombine the runner's and the grader's halves of a run's metrics, field by field.

    The halves own disjoint names, so nothing is back-filled from the other half: a
    real zero stays zero and an unmeasured runner field stays None. A grader key that
    collides with a runner field is a bug in the grader and is refused.
    """
    merged: dict[str, float | None] = {name: getattr(runner, name) for name in RunnerMetrics.model_fields}
    for key, value in grader.items():
        if key in merged:
            raise ValueError(f"grader metric {key!r} collides with the runner's half")
        merged[key] = value
    return merged
