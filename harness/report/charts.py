"""The report's plotly figures: headline uplift with whiskers, scenario x condition heatmap,
tokens versus success. Hover text always carries the counts and the interval bounds.

Figures are plotly.js's own JSON (`{"data": [...], "layout": {...}}`), built as plain dicts: the
page needs nothing else, and plotly's Python figure objects (their validators import half a
second of modules on a cold start) only checked what a test checks once (`go.Figure(fig)` accepts
every figure unchanged). The look is plotly's default template, read from its package data.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any

from harness.report.summary import Group, Summary

FONT = {"family": "system-ui, -apple-system, Segoe UI, sans-serif", "size": 12}
RDYLGN = [
    [0.0, "rgb(165,0,38)"],
    [0.1, "rgb(215,48,39)"],
    [0.2, "rgb(244,109,67)"],
    [0.3, "rgb(253,174,97)"],
    [0.4, "rgb(254,224,139)"],
    [0.5, "rgb(255,255,191)"],
    [0.6, "rgb(217,239,139)"],
    [0.7, "rgb(166,217,106)"],
    [0.8, "rgb(102,189,99)"],
    [0.9, "rgb(26,152,80)"],
    [1.0, "rgb(0,104,55)"],
]
"""ColorBrewer's RdYlGn as plotly spells it (plotly.js knows no such name)."""
CONFIG = {"displaylogo": False, "responsive": True}

Figure = dict[str, Any]
"""`{"data": [trace, ...], "layout": {...}}` as plotly.js takes it."""


def _label(version: str | None, agent: str, condition: str, *, agents: int) -> str:
    parts = ([version] if version else []) + ([agent] if agents > 1 else []) + [condition]
    return " · ".join(parts)


def _title(text: str) -> dict[str, str]:
    return {"text": text}


def uplift_figure(summary: Summary) -> Figure:
    """Uplift per condition and agent with 95% whiskers; without a control, pass rates with Wilson whiskers."""
    h = summary.header
    n_agents = len(h.agents)
    layout: dict[str, Any] = {}
    if h.control:
        rows = [u for u in summary.uplifts if u.scenario is None and u.split is None and u.value is not None]
        labels = [_label(u.version, u.agent, u.condition, agents=n_agents) for u in rows]
        hover = [
            f"{label}<br>uplift {u.value:+.2f} [{u.low:+.2f}, {u.high:+.2f}]<br>rate {u.rate} vs control {u.control_rate}"
            f"<br>p={u.p_value:.3g}, Holm p={u.p_adjusted if u.p_adjusted is not None else 1.0:.3g}"
            f"{' (survives)' if u.survives else ''}<br>discordant +{u.only_treatment}/−{u.only_control}, "
            f"McNemar p={u.mcnemar_p:.3g}<br>pairs {u.pairs}, scenarios {u.clusters}"
            for label, u in zip(labels, rows, strict=True)
        ]
        trace = {
            "error_x": {
                "array": [u.high - (u.value or 0) for u in rows],
                "arrayminus": [(u.value or 0) - u.low for u in rows],
                "symmetric": False,
                "thickness": 2,
                "type": "data",
                "width": 6,
            },
            "hoverinfo": "text",
            "hovertext": hover,
            "marker": {
                "color": ["#1a7f37" if u.low > 0 else "#cf222e" if u.high < 0 else "#57606a" for u in rows],
                "size": 11,
            },
            "mode": "markers",
            "name": "uplift",
            "x": [u.value or 0.0 for u in rows],
            "y": labels,
            "type": "scatter",
        }
        layout["shapes"] = [
            {
                "line": {"color": "#8c959f", "dash": "dot"},
                "type": "line",
                "x0": 0,
                "x1": 0,
                "xref": "x",
                "y0": 0,
                "y1": 1,
                "yref": "y domain",
            }
        ]
        title = f"Uplift over the control ({h.control}), 95% interval"
        axis, xrange = "uplift (rate − control rate, paired)", [-1.05, 1.05]
    else:
        groups = [g for g in summary.groups if g.by == "condition"]
        labels = [_label(g.version, g.agent, g.condition, agents=n_agents) for g in groups]
        trace = {
            "error_x": {
                "array": [g.passed.high - (g.passed.value or 0) for g in groups],
                "arrayminus": [(g.passed.value or 0) - g.passed.low for g in groups],
                "symmetric": False,
                "type": "data",
            },
            "hoverinfo": "text",
            "hovertext": [
                f"{lab}<br>passed {g.passed} [{g.passed.low:.2f}, {g.passed.high:.2f}]"
                for lab, g in zip(labels, groups, strict=True)
            ],
            "marker": {"size": 11},
            "mode": "markers",
            "name": "pass rate",
            "x": [g.passed.value or 0.0 for g in groups],
            "y": labels,
            "type": "scatter",
        }
        title = "Pass rate (no control: rates only), Wilson 95% interval"
        axis, xrange = "pass rate", [-0.05, 1.05]
    layout.update(
        xaxis={"title": _title(axis), "range": xrange, "zeroline": False},
        yaxis={"autorange": "reversed", "type": "category"},
        margin={"l": 220, "r": 30, "t": 50, "b": 50},
        font=FONT,
        title=_title(title),
        height=max(260, 60 + 36 * len(labels)),
        showlegend=False,
    )
    return {"data": [trace], "layout": layout}


def heatmap_figure(summary: Summary) -> Figure:
    """Pass rate per scenario (rows) and condition (columns), with k/n in each cell."""
    h = summary.header
    cols: list[str] = []
    for c in summary.cells:
        label = _label(c.version, c.agent, c.condition, agents=len(h.agents))
        if label not in cols:
            cols.append(label)
    rows = h.scenarios
    z: list[list[float | None]] = [[None] * len(cols) for _ in rows]
    text: list[list[str]] = [[""] * len(cols) for _ in rows]
    hover: list[list[str]] = [["no runs"] * len(cols) for _ in rows]
    ri, ci = {s: i for i, s in enumerate(rows)}, {c: i for i, c in enumerate(cols)}
    for c in summary.cells:
        i, j = ri[c.key], ci[_label(c.version, c.agent, c.condition, agents=len(h.agents))]
        z[i][j] = c.passed.value
        text[i][j] = f"{c.passed.k}/{c.passed.n}"
        hover[i][j] = (
            f"{c.key} · {cols[j]}<br>passed {c.passed} [{c.passed.low:.2f}, {c.passed.high:.2f}]"
            f"<br>usable {c.usable}<br>runs {c.counts.runs}, graded {c.counts.graded}"
        )
    trace = {
        "colorbar": {"title": _title("pass rate")},
        "colorscale": RDYLGN,
        "hoverinfo": "text",
        "hovertext": hover,
        "text": text,
        "texttemplate": "%{text}",
        "x": cols,
        "y": list(rows),
        "z": z,
        "zmax": 1,
        "zmin": 0,
        "type": "heatmap",
    }
    layout = {
        "font": FONT,
        "margin": {"l": 160, "r": 30, "t": 50, "b": 120},
        "yaxis": {"autorange": "reversed", "type": "category"},
        "xaxis": {"type": "category"},
        "title": _title("Pass rate: scenario × condition"),
        "height": max(300, 120 + 28 * len(rows)),
    }
    return {"data": [trace], "layout": layout}


def tokens_figure(summary: Summary) -> Figure:
    """Tokens per run versus pass rate, one point per cell, one series per condition.

    The controls are drawn last, as open diamonds with a thick outline, so a treatment's point at the
    same place cannot hide them (the reference every other series is read against)."""
    by_condition: dict[str, list[Group]] = {}
    for c in summary.cells:
        if c.cost.tokens_per_run is not None and c.passed.n:
            by_condition.setdefault(
                _label(c.version, c.agent, c.condition, agents=len(summary.header.agents)), []
            ).append(c)
    traces = []
    for label, cells in sorted(by_condition.items(), key=lambda kv: kv[1][0].control):
        control = cells[0].control
        marker: dict[str, Any] = {"opacity": 0.75, "size": [8 + min(c.passed.n, 30) for c in cells]}
        if control:
            marker.update(line={"width": 3}, opacity=1.0, symbol="diamond-open")
        traces.append(
            {
                "hoverinfo": "text",
                "hovertext": [
                    f"{c.key} · {label}{' (control)' if control else ''}<br>passed {c.passed} "
                    f"[{c.passed.low:.2f}, {c.passed.high:.2f}]<br>tokens/run {c.cost.tokens_per_run:,.0f}"
                    for c in cells
                ],
                "marker": marker,
                "mode": "markers",
                "name": f"{label} (control)" if control else label,
                "x": [c.cost.tokens_per_run for c in cells],
                "y": [c.passed.value for c in cells],
                "type": "scatter",
            }
        )
    layout = {
        "font": FONT,
        "yaxis": {"title": _title("pass rate"), "range": [-0.05, 1.05]},
        "margin": {"l": 60, "r": 30, "t": 50, "b": 50},
        "title": _title(
            "Tokens per run versus pass rate (one point per scenario cell; controls: open diamonds)"
        ),
        "height": 420,
        "xaxis": {"title": _title("tokens per run")},
    }
    return {"data": traces, "layout": layout}


@functools.cache
def template() -> str:
    """plotly's default template ("plotly") as JSON, from the plotly package's own data."""
    data = resources.files("plotly").joinpath("package_data", "templates", "plotly.json").read_text("utf-8")
    return _script_json(json.loads(data))


def _script_json(value: Any) -> str:
    """value as JSON that can sit inside a <script>: no `<`, `>` or `/` of the data can close it."""
    text = json.dumps(value, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("/", "\\u002f")


def figure_div(fig: Figure, div_id: str) -> str:
    """One figure as a div and the script that draws it (plotly.js is embedded once by the page)."""
    layout = _script_json(fig["layout"])
    with_template = '{"template":' + template() + ("," + layout[1:] if layout != "{}" else "}")
    return (
        f'<div style="height:{fig["layout"]["height"]}px; width:100%;">'
        f'<div id="{div_id}" class="plotly-graph-div" style="height:100%; width:100%;"></div>'
        f'<script>if (document.getElementById("{div_id}")) {{ Plotly.newPlot("{div_id}", '
        f"{_script_json(fig['data'])}, {with_template}, {json.dumps(CONFIG)}); }}</script></div>"
    )
