"""The headline: per agent and treatment, one sentence that answers "does it help, at what cost?".

Each sentence names the treatment and its control, gives the uplift in points with its 95% interval and
whether it survives the Holm correction of its table, and the cost difference per run and per solved
task (usable result) in money, or in tokens where the price table prices no model of the runs.
report.md, report.html and the terminal print the same `Headline.text`.
"""

from __future__ import annotations

from harness.report.fmt import money, num
from harness.report.summary import Group, Headline, Uplift


def _points(x: float) -> str:
    return f"{x * 100:+.0f}".replace("-", "−")


def _difference(treatment: float, control: float, unit: str, what: str) -> str:
    """`$0.0015 more per run ($0.0061 vs $0.0046)`; tokens as `3,330 more tokens per run (…)`."""
    fmt = money if unit == "usd" else num
    # The difference of the figures as printed, so the sentence adds up for its reader.
    treatment, control = (
        (round(treatment, 4), round(control, 4)) if unit == "usd" else (round(treatment), round(control))
    )
    delta = treatment - control
    size = fmt(abs(delta))
    word = "more" if delta > 0 else "less" if unit == "usd" else "fewer"
    amount = f"{size} {word}" if unit == "usd" else f"{size} {word} tokens"
    if delta == 0:
        amount = "the same" if unit == "usd" else "the same tokens"
    return f"{amount} {what} ({fmt(treatment)} vs {fmt(control)})"


def _cost(treatment: Group | None, control: Group | None) -> tuple[str | None, str]:
    """(unit, the cost clause): money where both sides are priced, else tokens, else why not."""
    if treatment is None or control is None:
        return None, "cost not measured"
    t, c = treatment.cost, control.cost
    if t.cost_per_run is not None and c.cost_per_run is not None:
        unit, per_run = "usd", (t.cost_per_run, c.cost_per_run)
        per_solved = (t.cost_per_usable, c.cost_per_usable)
    elif t.tokens_per_run is not None and c.tokens_per_run is not None:
        unit, per_run = "tokens", (t.tokens_per_run, c.tokens_per_run)
        per_solved = (t.tokens_per_usable, c.tokens_per_usable)
    else:
        return None, "no usage reported, so no cost"
    parts = [_difference(*per_run, unit, "per run")]
    if per_solved[0] is not None and per_solved[1] is not None:
        parts.append(_difference(per_solved[0], per_solved[1], unit, "per solved task"))
    else:
        side = "the treatment" if per_solved[0] is None else "the control"
        parts.append(f"per solved task not comparable ({side} solved none)")
    return unit, ", ".join(parts)


def _verdict(u: Uplift) -> str:
    if u.value is None or not u.pairs:
        return "no paired runs"
    adjusted = f"Holm p = {u.p_adjusted:.3g}" if u.p_adjusted is not None else "no p"
    family = f"{u.comparisons} comparison{'s' if u.comparisons != 1 else ''}"
    survives = "survives" if u.survives else "does not survive"
    return (
        f"{_points(u.value)} points [{_points(u.low)}, {_points(u.high)}] "
        f"({adjusted}: {survives} the correction over {family})"
    )


def headlines(uplifts: list[Uplift], groups: list[Group]) -> list[Headline]:
    """One Headline per aggregate uplift row, in the uplift table's order."""
    rows = {(g.version, g.agent, g.condition): g for g in groups if g.by == "condition"}
    out: list[Headline] = []
    for u in uplifts:
        if u.scenario is not None or u.split is not None:
            continue
        treatment = rows.get((u.version, u.agent, u.condition))
        control = rows.get((u.version, u.agent, u.control))
        unit, cost = _cost(treatment, control)
        who = f"{u.agent}{' @' + u.version if u.version else ''}"
        text = f"{who}, {u.condition} against the control {u.control}: {_verdict(u)}; {cost}."
        out.append(
            Headline(
                version=u.version,
                agent=u.agent,
                treatment=u.condition,
                control=u.control,
                survives=u.survives,
                unit=unit,
                text=text,
            )
        )
    return out
