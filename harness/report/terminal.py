"""The short table `assay report` prints: one row per condition, rates with counts."""

from __future__ import annotations

from harness.report.fmt import num, signed
from harness.report.spend import terminal_lines
from harness.report.summary import Summary

REPORTED_METRICS = ("turns", "input_tokens", "output_tokens", "cost_usd", "tool_invocations")
"""Metrics the terminal table shows (means over graded runs): a width budget, not a claim about what
matters; everything else is in summary.json and report.md. A test keeps every name real."""


WARNINGS_SHOWN = 8
"""Diagnostic warnings printed one per line; the rest are counted and left to report.md."""


def render_terminal(summary: Summary) -> str:
    """The headline sentences, the evidence line, a fixed-width table of the condition rows, and the
    diagnostic warnings one per line."""
    h = summary.header
    t = h.totals
    lines = [f"- {line.text}" for line in summary.headline]
    if lines:
        lines.append("")
    lines += [
        f"{t.runs} runs: {t.graded} graded, {t.failed_to_run} failed to run, {t.ungradeable} ungradeable, "
        f"{t.invalid} invalid{f', {t.ungraded} not graded' if t.ungraded else ''}"
        f"{f', {t.unreadable} unreadable' if t.unreadable else ''}; "
        f"smallest graded cell n = {h.min_graded_per_cell}; control: {h.control or 'none (rates only)'}"
        + (
            f"; planned vs done: {summary.completeness.done}/{summary.completeness.planned}"
            if summary.completeness
            else ""
        )
    ]
    uplift = {
        (u.version, u.agent, u.condition): u
        for u in summary.uplifts
        if u.scenario is None and u.split is None
    }
    rows = [["version", "agent", "condition", "passed", "usable", "uplift [95% CI]", *REPORTED_METRICS]]
    for g in summary.groups:
        if g.by != "condition":
            continue
        u = uplift.get((g.version, g.agent, g.condition))
        if g.agent in h.sanity:
            up = f"sanity: should {h.sanity[g.agent]}"
        elif g.control:
            up = "control"
        else:
            up = (
                f"{signed(u.value)} [{signed(u.low)}, {signed(u.high)}]{' *' if u.survives else ''}"
                if u
                else "—"
            )
        metrics = [
            num(g.metrics[m].mean, 4 if m == "cost_usd" else 0) if m in g.metrics else "—"
            for m in REPORTED_METRICS
        ]
        rows.append([g.version or "", g.agent, g.condition, str(g.passed), str(g.usable), up, *metrics])
    if not h.versions:
        rows = [r[1:] for r in rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip())
    lines.extend(_version_lines(summary))
    for record in summary.rounds:
        lines.extend(terminal_lines(record))
    budget = [g for g in summary.groups if g.by == "condition" and g.counts.budget_stops]
    if budget:
        lines.append(
            "budget stops (graded on what they left): "
            + ", ".join(f"{g.agent} {g.condition} {g.counts.budget_stops}" for g in budget)
        )
    if any(u.survives for u in uplift.values()):
        lines.append("* survives the Holm correction across the uplift table")
    warnings = [d for d in summary.diagnostics if d.severity != "info"]
    for d in sorted(warnings, key=lambda d: d.severity != "error")[:WARNINGS_SHOWN]:
        lines.append(f"{d.severity}: {d.kind}: {d.message}")
    if len(warnings) > WARNINGS_SHOWN:
        lines.append(f"... and {len(warnings) - WARNINGS_SHOWN} more diagnostic warning(s) in report.md")
    return "\n".join(lines)


def _version_lines(summary: Summary) -> list[str]:
    """A version comparison's pooled uplift deltas, each beside its agent's control drift."""
    h = summary.header
    deltas = [d for d in summary.version_deltas if d.scenario is None]
    if not deltas:
        return []
    drift = {d.agent: d for d in summary.control_drift}
    rows = [
        ["agent", "condition", f"uplift @{h.baseline}", f"uplift @{h.candidate}", "delta", "control drift"]
    ]
    for d in deltas:
        cd = drift.get(d.agent)
        rows.append(
            [
                d.agent,
                d.condition,
                signed(d.baseline.value) if d.baseline else "—",
                signed(d.candidate.value) if d.candidate else "—",
                signed(d.value),
                f"{signed(cd.value)} ({cd.baseline} -> {cd.candidate})" if cd else "—",
            ]
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = [f"version comparison {h.baseline} -> {h.candidate} (negative delta: the tool helped less):"]
    out += ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return out
