"""Capture, the last stage of a trial: what it left behind, read back into artifacts and metrics.

diff.patch against the baseline, the files changed outside `writable` (unsafe edits), the
runner's half of the metrics from the adapter's usage.jsonl, and context.json's loaded items
(anything loaded other than the cell's guide invalidates the run, as in seed 000).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.artifacts.names import DIFF_FILE
from harness.artifacts.records import RunnerMetrics
from harness.trial.environment import TrialPaths
from harness.trial.workspace import Workspace, changes, diff, unsafe_edits

if TYPE_CHECKING:
    from harness.trial.prepare import Trial
    from harness.trial.record import Outcome


def collect(trial: Trial, out: Outcome) -> None:
    """diff.patch and the unsafe edits of the finished workspace; a context violation invalidates."""
    out.fields["unsafe_edits"] = workspace(trial.ws, trial.job.scenario.writable, trial.paths.run_dir)
    out.fields["invalid"] = out.fields.get("invalid") or context_violation(trial.paths)


def _rows(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    rows: list[dict[str, Any]] = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows


def _sum(rows: list[dict[str, Any]], key: str) -> int | None:
    values = [int(r[key]) for r in rows if isinstance(r.get(key), int | float)]
    return sum(values) if values else None


def metrics(paths: TrialPaths, *, duration_s: float) -> RunnerMetrics:
    """The runner's half of the metrics: usage totals and the agent's wall-clock."""
    rows = _rows(paths.usage)
    contexts = [int(r["context"]) for r in rows if isinstance(r.get("context"), int | float)]
    limits = [int(r["context_limit"]) for r in rows if isinstance(r.get("context_limit"), int | float)]
    costs = [float(r["cost_usd"]) for r in rows if isinstance(r.get("cost_usd"), int | float)]
    return RunnerMetrics(
        turns=len(rows) if paths.usage.is_file() else None,
        input_tokens=_sum(rows, "input"),
        output_tokens=_sum(rows, "output"),
        cache_read_tokens=_sum(rows, "cache_read"),
        cache_write_tokens=_sum(rows, "cache_write"),
        reasoning_tokens=_sum(rows, "reasoning"),
        peak_context=max(contexts) if contexts else None,
        context_limit=max(limits) if limits else None,
        cost_usd=round(sum(costs), 6) if costs else None,
        duration_s=round(duration_s, 3),
    )


def context_violation(paths: TrialPaths) -> str | None:
    """Why the adapter's reported context invalidates the run, or None."""
    if not paths.context.is_file():
        return None
    try:
        data = json.loads(paths.context.read_text(encoding="utf-8"))
    except json.JSONDecodeError:
        return "context.json is not JSON"
    loaded = data.get("loaded", []) if isinstance(data, dict) else []
    allowed = [str(paths.workspace)]
    if paths.skill_dir is not None:
        allowed.append(str(paths.skill_dir))
    bad = [
        str(item)
        for item in loaded
        if not (
            isinstance(item, str) and (not item.startswith("/") or any(item.startswith(a) for a in allowed))
        )
    ]
    return f"unexpected context loaded: {', '.join(bad)}" if bad else None


def workspace(ws: Workspace, writable: tuple[str, ...], run_dir: Path) -> tuple[str, ...]:
    """Write diff.patch and return the unsafe edits."""
    changed = changes(ws)
    (run_dir / DIFF_FILE).write_bytes(diff(ws, changed))
    return tuple(unsafe_edits(changed, writable))
