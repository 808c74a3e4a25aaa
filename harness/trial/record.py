"""run.json, the record of a trial: what the stages left, gathered even when one of them failed.

The stages fill in an `Outcome` as they go; `record` turns it into the `RunRecord` that
`harness.trial.run_trial` writes last. Whatever a stage did not get to stays at its default,
so a trial that failed early is still a complete, readable record (`error`, `traceback`).
"""

from __future__ import annotations

import contextlib
import functools
import platform
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from compiler.contract import Job
from harness.artifacts.names import AGENT_INFO, TRACE_FILE
from harness.artifacts.readers import loads
from harness.artifacts.records import CanaryResult, RunnerMetrics, RunRecord, StepRecord
from harness.artifacts.run_tree import identity
from harness.artifacts.sandbox_sections import Protections
from harness.sandbox import proc, protections
from harness.sandbox.isolation import Isolation, limits
from harness.sandbox.launch import Launcher
from harness.trial import agent
from harness.trial.environment import ancestor_instruction_files

if TYPE_CHECKING:
    from harness.gateway import Meter
    from harness.gateway.model_route import TrialGateway
    from harness.sandbox.disk import TrialDisk
    from harness.trial.provision import Provided
    from harness.trial.session import Session
    from harness.trial.tracing import Collector


@dataclass
class Outcome:
    """What run.json will say, filled in stage by stage (and read also when a stage failed)."""

    iso: Isolation
    started: float = field(default_factory=time.time)
    fields: dict[str, Any] = field(default_factory=dict)
    """RunRecord fields a stage decided: invalid, exit_code, error, unsafe_edits, ..."""
    provided: Provided | None = None
    launcher: Launcher | None = None
    argv: list[str] = field(default_factory=list)
    """The adapter's own command line, as recorded (without the gateway's forwarder)."""
    canaries: tuple[CanaryResult, ...] = ()
    session: Session | None = None
    steps: list[StepRecord] = field(default_factory=list)
    gateway: TrialGateway | None = None
    gateway_summary: dict[str, Any] | None = None
    tracer: Collector | None = None
    """The tool-use collector, when the cell traces a tool: it alone writes trace.jsonl."""
    meter: Meter | None = None
    """The trial's budgets, kept by the gateway; None when it has none or none could be enforced."""
    budget_note: str | None = None
    """Why the trial's budgets were not enforced."""
    disk: TrialDisk | None = None
    """The trial's size-limited filesystems; `close` copies them out and unmounts them."""
    disk_note: str | None = None
    """Why a size limit that is set is not kept by the kernel (`harness.trial.prepare.Trial.disk_note`)."""
    closing: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)
    """What ends with the trial: the model gateway and the tool-use collector, when there are."""
    timings: dict[str, float] = field(default_factory=dict)
    _clock: float = field(default_factory=time.perf_counter)
    _carved: float = 0.0

    def lap(self, stage: str) -> None:
        """Record the seconds since the last lap under the stage's name (less what was carved out)."""
        now = time.perf_counter()
        self.timings[stage] = round(now - self._clock - self._carved, 4)
        self._clock, self._carved = now, 0.0

    def carve(self, stage: str, seconds: float) -> None:
        """Count part of the stage under way as `stage` (the canaries run in the agent's launch)."""
        self.timings[stage] = round(self.timings.get(stage, 0.0) + seconds, 4)
        self._carved += seconds

    def close(self, run_dir: Path) -> None:
        """End what the trial started (the gateway, the collector, then its size-limited
        filesystems), keeping the gateway's usage totals and writing trace.jsonl from the
        collector's rows. Each is ended even when something before it failed (a full disk under
        trace.jsonl, say); the failure is raised after."""
        with contextlib.ExitStack() as ending:
            ending.callback(self._close_disk)
            ending.enter_context(self.closing)
            if self.tracer is not None:
                self.tracer.write(run_dir / TRACE_FILE)
                self.fields["trace_channel"] = self.tracer.report()
            self.gateway_summary = self.gateway.summary() if self.gateway else None

    def _close_disk(self) -> None:
        problem = self.disk.close() if self.disk is not None else None
        if problem and not self.fields.get("error"):  # the preserved workspace is incomplete: not gradeable
            self.fields["error"] = problem


def record(job: Job, run_dir: Path, out: Outcome, *, concurrent: bool) -> RunRecord:
    """The run.json record of a trial that is over."""
    extra = _extra(out.provided, out.launcher)
    if out.gateway_summary:
        extra["gateway"] = out.gateway_summary
    if out.disk is not None and out.disk.skipped:
        extra["disk_skipped"] = out.disk.skipped[:100]
    if out.meter is not None:
        extra["budget"] = {**out.meter.summary(), "enforced": "gateway"}
    elif job.limits.budgets():
        extra["budget"] = {"budgets": job.limits.budgets(), "enforced": None, "note": out.budget_note}
    return RunRecord(
        **identity(job),
        agent_version=_installed_version(run_dir) or job.agent.version,
        agent_command=agent.describe(out.argv) if out.argv else "",
        started_at=out.started,
        ended_at=time.time(),
        environment=_environment(out.iso, job, out.provided),
        isolation=out.iso.name,
        infra_retries=out.session.retries if out.session else 0,
        canaries=out.canaries,
        concurrent=concurrent,
        metrics=_sum_metrics(out.steps) if out.steps else RunnerMetrics(),
        steps=tuple(out.steps) if job.scenario.steps else (),
        protections=_protections(out) if out.launcher is not None else None,
        sandbox_trees=dict(sorted(out.launcher.trees.items())) if out.launcher is not None else {},
        limits_applied=_limits_applied(job, out.launcher),
        extra=extra | {"timings_s": out.timings},
        **out.fields,
    )


def _protections(out: Outcome) -> Protections:
    """The isolation's measured protections, plus whether the kernel kept the size limits."""
    held = protections.measure(out.iso, neutralised=True)
    assert out.launcher is not None
    kept = out.launcher.disks.keys()
    if out.disk_note is None:
        return held.model_copy(update={"disk_limited": bool(kept)})
    why = f"the size limits of the agent's folders are only watched, so it can write past them between two looks ({out.disk_note})"
    return held.model_copy(update={"disk_limited": False, "failed": (*held.failed, why)})


def _environment(iso: Isolation, job: Job, provided: Provided | None) -> dict[str, str]:
    env = {
        "os": platform.platform(),
        "python": platform.python_version(),
        "assay": _assay_version(),
        "isolation": iso.name,
        "tree_kill": "pidns" if proc.pidns_available() else "killpg (not guaranteed)",
        "network_off_enforced": str(
            not job.cell.provisions.network and (proc.pidns_available() or iso.enforces_network_off)
        ).lower(),
    }
    if job.version:
        env["tool_version"] = job.version
    if provided is not None:
        env["knowledge_links"] = provided.link_mode
    return env


def _limits_applied(job: Job, launcher: Launcher | None) -> dict[str, str]:
    """Every limit of the trial as it applied: the runner's own, then the sandbox's."""
    lim = job.limits
    runner = {
        "timeout": f"{lim.timeout_s:g} s (runner)",
        "output": "off" if lim.output_bytes is None else f"{lim.output_bytes} bytes (runner)",
    }
    return runner | (limits.applied(launcher.limits, launcher.enforced) if launcher is not None else {})


@functools.cache
def _assay_version() -> str:
    try:
        from importlib.metadata import version

        return version("assay")
    except Exception:  # not installed (run from a checkout)
        return "0+checkout"


def _sum_metrics(steps: list[StepRecord]) -> RunnerMetrics:
    if len(steps) == 1:
        return steps[0].metrics
    total: dict[str, Any] = {}
    for name in RunnerMetrics.model_fields:
        values = [getattr(s.metrics, name) for s in steps if getattr(s.metrics, name) is not None]
        if not values:
            continue
        total[name] = max(values) if name in ("peak_context", "context_limit") else sum(values)
    return RunnerMetrics(**total)


def _installed_version(run_dir: Path) -> str | None:
    """The CLI version a real-agent adapter read back from its binary (its agent.json)."""
    try:
        version = loads((run_dir / AGENT_INFO).read_bytes()).get("version")
    except (OSError, ValueError, AttributeError):
        return None
    return version if isinstance(version, str) else None


REFUSED_LISTED = 200
"""Outbox entries refused that run.json lists (the count is complete)."""


def _extra(provided: Provided | None, launcher: Launcher | None) -> dict[str, Any]:
    extra: dict[str, Any] = {"shimmed": list(provided.shimmed)} if provided else {}
    if launcher is not None and launcher.refused:  # the agent chooses how many: 100,000 links had
        refused = sorted(set(launcher.refused))  # made a run.json of megabytes
        extra["sandbox_refused"] = refused[:REFUSED_LISTED]
        if len(refused) > REFUSED_LISTED:
            extra["sandbox_refused_count"] = len(refused)
    if launcher is not None and launcher.isolation.name == "none":
        visible = ancestor_instruction_files(launcher.cwd)
        if visible:
            extra["host_instruction_files_visible"] = visible
    return extra
