"""Spend and stopping: what a matrix run in rounds decided, what it did not run and why, and what that
saved against the full plan (from its rounds.json), in sentences and a table every renderer draws."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from compiler.contract import parse_job_id
from harness.artifacts.rounds import RoundsRecord, Verdict
from harness.report.fmt import money, num, signed


@dataclass(frozen=True)
class SpendView:
    """One matrix's rounds, ready to render."""

    title: str
    sentences: list[str]
    header: list[str]
    rows: list[list[str]]
    skipped_header: list[str]
    skipped_rows: list[list[str]]


def _amount(tokens: float | None, usd: float | None) -> str:
    if tokens is None:
        return "unknown"
    return f"{num(tokens)} tokens" + (f" ({money(usd)})" if usd is not None else "")


def _verdict_row(v: Verdict, record: RoundsRecord) -> list[str]:
    what = {"effect": "uplift", "below": f"below {record.min_uplift:g}", "open": "open"}[v.status]
    if v.scenario is None:
        evidence = f"[{signed(v.low)}, {signed(v.high)}] at level {v.level:.2g}" if v.level else "—"
    else:
        evidence = f"e = {num(v.e_value)}" + (
            f" (needs {num(record.scenario_threshold)})" if record.scenario_threshold else ""
        )
    return [
        v.agent,
        v.condition,
        v.scenario or "all scenarios",
        what,
        str(v.round) if v.round else "—",
        signed(v.value),
        evidence,
        str(v.pairs),
    ]


def view(record: RoundsRecord) -> SpendView:
    """The sentences and tables of one rounds.json."""
    decided = record.until == "decided"
    sentences = []
    if decided:
        sentences.append(
            f"Run in rounds until decided: round k runs trial k of every cell an open comparison needs "
            f"(treatment and control, paired, every scenario). {record.rounds_run} of "
            f"{record.rounds_planned} planned rounds ran"
            + ("" if record.finished else " (unfinished: rerun to resume)")
            + f". Method: {record.method}. The chance of declaring any effect that is not there is at most "
            f"{record.alpha:g}, however many rounds are looked at"
            + (f"; the smallest uplift that matters: {record.min_uplift:g}" if record.min_uplift else "")
            + "."
        )
    if record.budget is not None:
        cap = " and ".join(
            x
            for x in (
                f"{num(record.budget.tokens)} tokens" if record.budget.tokens is not None else "",
                money(record.budget.cost_usd) if record.budget.cost_usd is not None else "",
            )
            if x
        )
        sentences.append(
            f"Matrix budget: {cap}. "
            + (
                f"Scheduling stopped at round {record.budget.stopped_at_round}: {record.budget.reason}."
                if record.budget.reason
                else "Not reached."
            )
        )
    why = Counter(s.why for s in record.skipped)
    spent = _amount(record.spend.tokens, record.spend.cost_usd)
    line = f"{record.ran} of {record.planned} planned trials ran ({spent})"
    if record.skipped:
        line += "; not run: " + ", ".join(f"{n} because {_why(w)}" for w, n in sorted(why.items()))
        saved = record.spend.saved_tokens
        if saved is not None:
            whole = record.spend.tokens + saved
            share = f", {saved / whole:.0%} of the full plan's estimated {num(whole)} tokens" if whole else ""
            line += f"; saved about {_amount(saved, record.spend.saved_cost_usd)}{share}"
            line += " (each trial not run: the mean of its cell's runs)"
    sentences.append(line + ".")
    verdicts = sorted(
        (v for v in record.verdicts if v.scenario is None or v.status != "open"),
        key=lambda v: (v.status == "open", v.agent, v.condition, v.scenario or ""),
    )
    open_scenarios = sum(1 for v in record.verdicts if v.scenario is not None and v.status == "open")
    if decided and open_scenarios:
        sentences.append(f"{open_scenarios} scenario comparison(s) still open are not listed one by one.")
    per_cell: Counter[tuple[str, str, str, str]] = Counter()
    for s in record.skipped:
        jid = parse_job_id(s.job)
        per_cell[(jid.agent, jid.cell, jid.scenario, s.why)] += 1
    return SpendView(
        title=("Until decided" if decided else "Matrix budget") + f": {record.matrix}",
        sentences=sentences,
        header=[
            "agent",
            "condition",
            "scenario",
            "decided",
            "at round",
            "uplift",
            "interval / evidence",
            "pairs",
        ],
        rows=[_verdict_row(v, record) for v in verdicts],
        skipped_header=["agent", "condition", "scenario", "why", "trials not run"],
        skipped_rows=[[a, c, sc, _why(w), str(n)] for (a, c, sc, w), n in sorted(per_cell.items())],
    )


def _why(why: str) -> str:
    return "its comparisons were decided" if why == "decided" else "of the matrix budget"


def terminal_lines(record: RoundsRecord) -> list[str]:
    """A few lines for the terminal: what was decided, what was not run, what it saved."""
    lines = []
    if record.until == "decided":
        decided = [v for v in record.verdicts if v.status != "open"]
        lines.append(
            f"{record.matrix}: {record.rounds_run} of {record.rounds_planned} round(s) run, {len(decided)} decided"
        )
        for v in decided:
            where = f"{v.agent} {v.condition}" + (f" on {v.scenario}" if v.scenario else " (all scenarios)")
            what = "uplift" if v.status == "effect" else f"uplift below {record.min_uplift:g}"
            lines.append(f"  decided at round {v.round}: {where}: {what} {signed(v.value)}")
    if record.skipped:
        why = Counter(s.why for s in record.skipped)
        saved = record.spend.saved_tokens
        lines.append(
            f"ran {record.ran} of {record.planned} planned trial(s); not run: "
            + ", ".join(f"{n} ({w})" for w, n in sorted(why.items()))
            + (f"; saved about {_amount(saved, record.spend.saved_cost_usd)}" if saved is not None else "")
        )
    if record.budget is not None and record.budget.reason:
        lines.append(f"budget: {record.budget.reason}; scheduling stopped")
    return lines
