"""The report's plotly figures: headline uplift with whiskers, scenario x condition heatmap,
tokens versus success. Hover text always carries the counts and the interval bounds."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from harness.report.summary import Group, Summary

FONT = {"family": "system-ui, -apple-system, Segoe UI, sans-serif", "size": 12}


def _label(version: str | None, agent: str, condition: str, *, agents: int) -> str:
    parts = ([version] if version else []) + ([agent] if agents > 1 else []) + [condition]
    return " · ".join(parts)


def uplift_figure(summary: Summary) -> go.Figure:
    """Uplift per condition and agent with 95% whiskers; without a control, pass rates with Wilson whiskers."""
    h = summary.header
    n_agents = len(h.agents)
    fig = go.Figure()
    if h.control:
        rows = [u for u in summary.uplifts if u.scenario is None and u.split is None and u.value is not None]
        labels = [_label(u.version, u.agent, u.condition, agents=n_agents) for u in rows]
        values = [u.value or 0.0 for u in rows]
        hover = [
            f"{label}<br>uplift {u.value:+.2f} [{u.low:+.2f}, {u.high:+.2f}]<br>rate {u.rate} vs control {u.control_rate}"
            f"<br>p={u.p_value:.3g}, Holm p={u.p_adjusted if u.p_adjusted is not None else 1.0:.3g}"
            f"{' (survives)' if u.survives else ''}<br>discordant +{u.only_treatment}/−{u.only_control}, "
            f"McNemar p={u.mcnemar_p:.3g}<br>pairs {u.pairs}, scenarios {u.clusters}"
            for label, u in zip(labels, rows, strict=True)
        ]
        fig.add_trace(
            go.Scatter(
                x=values,
                y=labels,
                mode="markers",
                marker={
                    "size": 11,
                    "color": [
                        "#1a7f37" if u.low > 0 else "#cf222e" if u.high < 0 else "#57606a" for u in rows
                    ],
                },
                error_x={
                    "type": "data",
                    "symmetric": False,
                    "array": [u.high - (u.value or 0) for u in rows],
                    "arrayminus": [(u.value or 0) - u.low for u in rows],
                    "thickness": 2,
                    "width": 6,
                },
                hovertext=hover,
                hoverinfo="text",
                name="uplift",
            )
        )
        fig.add_vline(x=0, line_dash="dot", line_color="#8c959f")
        title, axis = (
            f"Uplift over the control ({h.control}), 95% interval",
            "uplift (rate − control rate, paired)",
        )
        xrange = [-1.05, 1.05]
    else:
        rows_g = [g for g in summary.groups if g.by == "condition"]
        labels = [_label(g.version, g.agent, g.condition, agents=n_agents) for g in rows_g]
        fig.add_trace(
            go.Scatter(
                x=[g.passed.value or 0.0 for g in rows_g],
                y=labels,
                mode="markers",
                marker={"size": 11},
                error_x={
                    "type": "data",
                    "symmetric": False,
                    "array": [g.passed.high - (g.passed.value or 0) for g in rows_g],
                    "arrayminus": [(g.passed.value or 0) - g.passed.low for g in rows_g],
                },
                hovertext=[
                    f"{lab}<br>passed {g.passed} [{g.passed.low:.2f}, {g.passed.high:.2f}]"
                    for lab, g in zip(labels, rows_g, strict=True)
                ],
                hoverinfo="text",
                name="pass rate",
            )
        )
        title, axis = "Pass rate (no control: rates only), Wilson 95% interval", "pass rate"
        xrange = [-0.05, 1.05]
    fig.update_layout(
        title=title,
        xaxis={"title": axis, "range": xrange, "zeroline": False},
        yaxis={"autorange": "reversed", "type": "category"},
        height=max(260, 60 + 36 * len(labels)),
        margin={"l": 220, "r": 30, "t": 50, "b": 50},
        font=FONT,
        showlegend=False,
    )
    return fig


def heatmap_figure(summary: Summary) -> go.Figure:
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
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=cols,
            y=rows,
            text=text,
            texttemplate="%{text}",
            hovertext=hover,
            hoverinfo="text",
            zmin=0,
            zmax=1,
            colorscale="RdYlGn",
            colorbar={"title": "pass rate"},
        )
    )
    fig.update_layout(
        title="Pass rate: scenario × condition",
        font=FONT,
        height=max(300, 120 + 28 * len(rows)),
        margin={"l": 160, "r": 30, "t": 50, "b": 120},
        yaxis={"autorange": "reversed", "type": "category"},
        xaxis={"type": "category"},
    )
    return fig


def tokens_figure(summary: Summary) -> go.Figure:
    """Tokens per run versus pass rate, one point per cell, one series per condition.

    The controls are drawn last, as open diamonds with a thick outline, so a treatment's point at the
    same place cannot hide them (the reference every other series is read against)."""
    fig = go.Figure()
    by_condition: dict[str, list[Group]] = {}
    for c in summary.cells:
        if c.cost.tokens_per_run is not None and c.passed.n:
            by_condition.setdefault(
                _label(c.version, c.agent, c.condition, agents=len(summary.header.agents)), []
            ).append(c)
    ordered = sorted(by_condition.items(), key=lambda kv: kv[1][0].control)
    for label, cells in ordered:
        control = cells[0].control
        marker: dict[str, Any] = {"size": [8 + min(c.passed.n, 30) for c in cells], "opacity": 0.75}
        if control:
            marker.update(symbol="diamond-open", opacity=1.0, line={"width": 3})
        fig.add_trace(
            go.Scatter(
                x=[c.cost.tokens_per_run for c in cells],
                y=[c.passed.value for c in cells],
                mode="markers",
                name=f"{label} (control)" if control else label,
                marker=marker,
                hovertext=[
                    f"{c.key} · {label}{' (control)' if control else ''}<br>passed {c.passed} "
                    f"[{c.passed.low:.2f}, {c.passed.high:.2f}]<br>tokens/run {c.cost.tokens_per_run:,.0f}"
                    for c in cells
                ],
                hoverinfo="text",
            )
        )
    fig.update_layout(
        title="Tokens per run versus pass rate (one point per scenario cell; controls: open diamonds)",
        font=FONT,
        height=420,
        xaxis={"title": "tokens per run"},
        yaxis={"title": "pass rate", "range": [-0.05, 1.05]},
        margin={"l": 60, "r": 30, "t": 50, "b": 50},
    )
    return fig


def figure_div(fig: go.Figure, div_id: str) -> str:
    """One figure as a div (plotly.js is embedded once by the page, not per figure)."""
    config: dict[str, Any] = {"displaylogo": False, "responsive": True}
    html: str = fig.to_html(full_html=False, include_plotlyjs=False, div_id=div_id, config=config)
    return html
