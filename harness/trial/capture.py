"""Capture, the last stage of a trial: what it left behind, read back into artifacts and metrics.

diff.patch against the baseline, the files changed outside `writable` (unsafe edits), the
runner's half of the metrics from the adapter's usage.jsonl. The adapter's context.json is not
read here: the agent writes it, so what it names is advisory (the grader shows it in the grade's
`context`), never a reason to take the run out of the rates (issue 13; seed 000 had made it one).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.artifacts.names import DIFF_FILE, RETRIES_DIR, STEPS_DIR, USAGE_FILE
from harness.artifacts.readers import Turn, read_usage
from harness.artifacts.records import RunnerMetrics, UsageCheck
from harness.artifacts.sandbox_sections import printable
from harness.gateway.log import gateway_turns
from harness.trial.environment import TrialPaths
from harness.trial.patch import LISTED, diff
from harness.trial.workspace import Workspace, scan, unsafe_edits

TOTALS = (
    ("input", "input_tokens"),
    ("output", "output_tokens"),
    ("cache_read", "cache_read_tokens"),
    ("cache_write", "cache_write_tokens"),
    ("reasoning", "reasoning_tokens"),
)
"""usage.jsonl's token kinds -> RunnerMetrics' names."""

if TYPE_CHECKING:
    from harness.trial.prepare import Trial
    from harness.trial.record import Outcome


def collect(trial: Trial, out: Outcome) -> None:
    """diff.patch and the unsafe edits of the finished workspace; the adapter's usage set against
    the gateway's."""
    out.fields.update(workspace(trial.ws, trial.job.scenario.writable, trial.paths.run_dir))
    log = out.gateway.usage_log if out.gateway else None
    if log is not None and out.steps:
        out.fields["usage_check"] = usage_check(trial.paths.run_dir, log, since=out.steps[0].started_at)


def _totals(turns: Sequence[Turn]) -> dict[str, int]:
    return {"turns": len(turns)} | {name: sum(getattr(t, kind) for t in turns) for kind, name in TOTALS}


def _metrics(turns: Sequence[Turn], *, reported: bool, duration_s: float) -> RunnerMetrics:
    contexts = [t.context for t in turns if t.context is not None]
    limits = [t.context_limit for t in turns if t.context_limit is not None]
    totals = _totals(turns) if reported else {}
    return RunnerMetrics(
        **totals,
        peak_context=max(contexts) if contexts else None,
        context_limit=max(limits) if limits else None,
        duration_s=round(duration_s, 3),
    )


def metrics(
    paths: TrialPaths, *, duration_s: float, gateway: tuple[Path, float, float] | None = None
) -> RunnerMetrics:
    """The runner's half of the metrics: usage totals and the agent's wall-clock.

    Args:
        paths: The trial's files (usage.jsonl, the adapter's report).
        duration_s: The session's wall-clock.
        gateway: (gateway.jsonl, start, end) when a gateway carried the model: its requests in
            that window are the account of record, the adapter's report is only compared.
    """
    if gateway is not None:
        log, start, end = gateway
        turns = [t for t in gateway_turns(log) if start <= t.t <= end]
        return _metrics(turns, reported=True, duration_s=duration_s)
    adapter, _ = read_usage(paths.usage)
    return _metrics(adapter, reported=paths.usage.is_file(), duration_s=duration_s)


def _usage_files(run_dir: Path) -> Iterable[Path]:
    """Every usage.jsonl of the run: earlier steps, retried attempts, the last session."""
    for folder in (STEPS_DIR, RETRIES_DIR):
        yield from sorted((run_dir / folder).glob(f"*/{USAGE_FILE}"))
    yield run_dir / USAGE_FILE


def usage_check(run_dir: Path, log: Path, *, since: float) -> UsageCheck:
    """The adapter's usage report set against the gateway's account of the same trial."""
    adapter: list[Turn] = []
    malformed = 0
    for path in _usage_files(run_dir):
        turns, bad = read_usage(path)
        adapter += turns
        malformed += bad
    ours, theirs = _totals([t for t in gateway_turns(log) if t.t >= since]), _totals(adapter)
    return UsageCheck(
        source="gateway",
        gateway=ours,
        adapter=theirs,
        differs=tuple(k for k in ours if ours[k] != theirs[k]),
        adapter_malformed=malformed,
    )


def workspace(ws: Workspace, writable: tuple[str, ...], run_dir: Path) -> dict[str, Any]:
    """Write diff.patch; return run.json's unsafe edits and what the patch had to leave out."""
    changed = scan(ws)
    patch = diff(ws, changed)
    (run_dir / DIFF_FILE).write_bytes(patch.data)
    unsafe = unsafe_edits([c.rel for c in changed], writable)
    return {  # the agent chooses how many and what names: the first few, printable, and the count
        "unsafe_edits": tuple(printable(os.fsencode(rel)) for rel in unsafe[:LISTED]),
        "unsafe_edits_count": len(unsafe),
        "diff_omitted": patch.omitted,
        "diff_omitted_count": patch.omitted_count,
    }
