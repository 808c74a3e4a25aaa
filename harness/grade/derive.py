"""Sections derived from check outcomes and artifacts: authorities, lint, context, metrics."""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from compiler.contract import CheckSpec, Job
from harness.artifacts.grade_sections import AuthorityVerdict, ContextLoad, Disagreement, LintFinding
from harness.artifacts.readers import Context, Trace
from harness.artifacts.records import CheckOutcome

# Seed 002's event-derived metrics: event type -> metric name (the grader's half).
EVENT_METRICS = {
    "injection": "injections",
    "memory_read": "memory_reads",
    "recall": "recalls",
    "recall_miss": "recall_misses",
    "memory_write": "memory_writes",
    "finding": "session_findings",
    "task_transition": "task_transitions",
    "mishap": "mishaps",
    "tool_error": "tool_errors",
}
_COUNT = re.compile(r"^(\d+) found")
_CODE = re.compile(r"\b[A-Z]{1,4}\d{2,4}\b")


def authority_outcomes(outcomes: Sequence[CheckOutcome]) -> list[CheckOutcome]:
    """An authority check that could not run fails explicitly with that reason, never passes."""
    fixed = []
    for o in outcomes:
        if o.authority and o.outcome in ("error", "unavailable"):
            o = o.model_copy(
                update={"outcome": "fail", "message": f"authority {o.authority} unavailable: {o.message}"}
            )
        fixed.append(o)
    return fixed


def authorities(raw: Sequence[CheckOutcome]) -> dict[str, AuthorityVerdict]:
    """Validity per named authority from the checks that report for it (before the rewrite above)."""
    groups: dict[str, list[CheckOutcome]] = {}
    for o in raw:
        if o.authority:
            groups.setdefault(o.authority, []).append(o)
    out = {}
    for name, group in sorted(groups.items()):
        if any(o.outcome in ("error", "unavailable") for o in group):
            status = "unavailable"
        else:
            status = "valid" if all(o.outcome == "pass" for o in group) else "invalid"
        diag = "; ".join(f"{o.id}: {o.message}" for o in group if o.outcome != "pass" or status == "valid")
        out[name] = AuthorityVerdict(status=status, checks=tuple(o.id for o in group), diagnostics=diag)
    return out


def disagreements(verdicts: dict[str, AuthorityVerdict]) -> tuple[Disagreement, ...]:
    """Every pair of authorities where one accepts what the other rejects."""
    found = []
    for a, b in itertools.combinations(sorted(verdicts), 2):
        va, vb = verdicts[a], verdicts[b]
        if {va.status, vb.status} == {"valid", "invalid"}:
            yes, no = (a, b) if va.status == "valid" else (b, a)
            found.append(
                Disagreement(
                    accepts=yes,
                    rejects=no,
                    direction=f"{yes} accepts, {no} rejects",
                    accepts_diagnostics=verdicts[yes].diagnostics,
                    rejects_diagnostics=verdicts[no].diagnostics,
                )
            )
    return tuple(found)


def is_counting(spec: CheckSpec) -> bool:
    """A lint-like check: it counts findings against a maximum."""
    result = spec.params.get("result")
    return (isinstance(result, dict) and "count" in result) or (spec.source_kind or "").startswith("lint")


def lint_findings(specs: Sequence[CheckSpec], outcomes: Sequence[CheckOutcome]) -> tuple[LintFinding, ...]:
    """Findings of counting checks that found something (pass or fail)."""
    by_id = {s.id: s for s in specs}
    found = []
    for o in outcomes:
        spec = by_id.get(o.id)
        if spec is None or not is_counting(spec) or o.outcome not in ("pass", "fail"):
            continue
        match = _COUNT.match(o.message)
        count = int(match.group(1)) if match else o.count
        if count == 0 or (count is None and o.outcome == "pass"):
            continue  # a failure that does not say how many is still a finding
        found.append(
            LintFinding(
                check=o.id,
                severity=spec.severity,
                count=count,
                codes=tuple(sorted(set(_CODE.findall(o.message)))),
            )
        )
    return tuple(found)


def context_load(ctx: Context, job: Job) -> ContextLoad:
    """Loaded items; anything but the workspace's own files and the expected guide is unexpected."""
    if not ctx.present:
        return ContextLoad()
    allowed = ("/workspace/", "/skill/") if job.cell.provisions.skill_dir else ("/workspace/",)
    unexpected = tuple(i for i in ctx.loaded if i.startswith("/") and not any(a in i for a in allowed))
    return ContextLoad(present=True, loaded=ctx.loaded, unexpected=unexpected, error=ctx.error)


def metrics(trace: Trace, events: Sequence[dict[str, Any]] | None) -> dict[str, float]:
    """The grader's half of the metrics: tool calls from the trace, counts from the event log."""
    out: dict[str, float] = {
        "tool_calls": float(len(trace.invocations)),
        "tool_failures": float(sum(1 for c in trace.invocations if c.exit != 0)),
    }
    if events is not None:
        counts = Counter(str(e.get("type", e.get("event", ""))) for e in events)
        out["events"] = float(len(events))
        for kind, name in EVENT_METRICS.items():
            out[name] = float(counts.get(kind, 0))
        for kind, n in counts.items():
            if kind:
                out[f"events.{kind}"] = float(n)
    return dict(sorted(out.items()))
