"""The rows of report.html's two long tables, formatted here rather than by the template's loops.

Per scenario (one row per cell) and the metrics of every cell (one row per cell and metric: 15,000
rows over 1,000 cells) were most of the page's rendering, each value passing through the template's
autoescape one call at a time. Here every text that comes from the runs (scenario, agent, condition,
version, metric name) is escaped once per cell, and the numbers, formatted by `harness.report.fmt`,
are digits and punctuation that need none. The output is the template's own, byte for byte (a test
renders both).
"""

from __future__ import annotations

from collections.abc import Callable

from markupsafe import Markup, escape

from harness.report.fmt import holm_mark, num, rate_ci, rate_text, signed, ver
from harness.report.runlist import CellKey
from harness.report.summary import Group, Summary, Uplift


def _escaper() -> Callable[[str], str]:
    seen: dict[str, str] = {}

    def esc(text: str) -> str:
        found = seen.get(text)
        if found is None:
            found = seen[text] = str(escape(text))
        return found

    return esc


def _cell_head(c: Group, hv: bool, esc: Callable[[str], str]) -> str:
    version = f"<td>{esc(ver(c.version))}</td>" if hv else ""
    return (
        f"<tr>{version}<td>{esc(c.key)}</td><td>{esc(c.agent)}</td><td><code>{esc(c.condition)}</code></td>"
    )


def metric_rows(summary: Summary, *, hv: bool) -> Markup:
    """The metrics table's body: every cell's metrics, a row each."""
    esc = _escaper()
    rows: list[str] = []
    for c in summary.cells:
        head = _cell_head(c, hv, esc)
        for name, m in c.metrics.items():
            rows.append(
                f'{head}<td>{esc(name)}</td><td class="num">{m.n}</td><td class="num">{num(m.mean, 2)}</td>'
                f'<td class="num">{num(m.stddev, 2)}</td><td class="num">{num(m.min, 2)}</td>'
                f'<td class="num">{num(m.max, 2)}</td></tr>\n'
            )
    return Markup("".join(rows))


def scenario_rows(
    summary: Summary,
    uplifts: dict[tuple[str | None, str, str, str | None], Uplift],
    links: dict[CellKey, Markup],
    counts: dict[CellKey, int],
    *,
    hv: bool,
    cap: int,
) -> Markup:
    """The per-scenario table's body: one row per cell, its uplift over the control and its runs."""
    esc = _escaper()
    rows: list[str] = []
    for c in summary.cells:
        u = uplifts.get((c.version, c.agent, c.condition, c.key))
        ck = (c.version, c.key, c.agent, c.condition)
        if u:
            up = (
                f'<td class="num" data-sort="{u.value}">{signed(u.value)}</td><td class="num">'
                f"[{signed(u.low)}, {signed(u.high)}]</td>"
                f'<td class="num" data-sort="{u.p_adjusted}">{holm_mark(u)}</td>'
                f'<td class="num">{u.only_treatment} / {u.only_control}</td>'
            )
        else:
            up = "<td>—</td><td>—</td><td>—</td><td>—</td>"
        n = counts.get(ck, 0)
        more = f"<div>… {n - cap} more in summary.json</div>" if n > cap else ""
        rows.append(
            f'{_cell_head(c, hv, esc)}<td class="num">{c.counts.graded} / {c.counts.runs}</td>'
            f'<td data-sort="{c.passed.value}">{rate_ci(c.passed)}</td>'
            f'<td data-sort="{c.usable.value}">{rate_text(c.usable)}</td>{up}'
            f'<td class="num" data-sort="{c.cost.tokens_per_run}">{num(c.cost.tokens_per_run)}</td>\n'
            f'<td class="runs"><details><summary>{n} run(s)</summary>{links.get(ck, "")}{more}</details></td></tr>\n'
        )
    return Markup("".join(rows))
