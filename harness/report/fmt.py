"""Formatting shared by the renderers: a rate never appears without its counts."""

from __future__ import annotations

from typing import Any

from harness.report.summary import MetricStat, Rate, Uplift


def rate_text(r: Rate) -> str:
    """`0.50 (1/2)`."""
    return str(r)


def rate_ci(r: Rate) -> str:
    """`0.50 (1/2) [0.09, 0.91]`."""
    return f"{r} [{r.low:.2f}, {r.high:.2f}]"


def signed(x: float | None, digits: int = 2) -> str:
    return "n/a" if x is None else f"{x:+.{digits}f}"


def num(x: float | None, digits: int = 0) -> str:
    """A number with thousands separators, or an em dash for none."""
    if x is None:
        return "—"
    if digits == 0:
        return f"{x:,.0f}"
    return f"{x:,.{digits}f}"


def money(x: float | None) -> str:
    return "—" if x is None else f"${x:,.4f}"


def pvalue(p: float) -> str:
    return "1" if p >= 0.9995 else f"{p:.3f}" if p >= 0.001 else f"{p:.1e}"


def holm_mark(u: Uplift) -> str:
    """`0.094` or `0.012 ✓` (survives the Holm correction of its table); `—` without pairs."""
    if u.p_adjusted is None:
        return "—"
    return pvalue(u.p_adjusted) + (" ✓" if u.survives else "")


def units(u: Uplift) -> str:
    """What the uplift's t counts: `5 scenarios (df 4)`, `1 scenario (df 4, pairs)`, or `n too small`."""
    if u.units == "none":
        return f"{u.clusters} ({'n too small' if u.pairs else 'no pairs'})"
    return f"{u.clusters} (df {u.df}{', pairs' if u.units == 'pairs' else ''})"


def metric(m: MetricStat | None) -> str:
    if m is None:
        return "—"
    return f"{m.mean:,.1f} ± {m.stddev:,.1f} [{m.min:,.0f}, {m.max:,.0f}] (n={m.n})"


def leaf(key: str) -> str:
    """A section leaf for people: `by_subcommand.ruff check.invocations` -> `ruff check: invocations`."""
    if key.startswith("by_subcommand."):
        head, _, field = key[len("by_subcommand.") :].partition(".")
        return f"{head}: {field}" if field else head
    return key


def ver(v: str | None) -> str:
    return v or ""


FILTERS: dict[str, Any] = {
    "rate": rate_text,
    "rate_ci": rate_ci,
    "signed": signed,
    "num": num,
    "money": money,
    "pvalue": pvalue,
    "holm": holm_mark,
    "units": units,
    "metric": metric,
    "ver": ver,
    "leaf": leaf,
}
