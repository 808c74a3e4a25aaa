"""report.html: one self-contained page (plotly.js inlined, no network), sortable tables, run links."""

from __future__ import annotations

import os
from pathlib import Path

from plotly.offline import get_plotlyjs

from harness.report.charts import figure_div, heatmap_figure, tokens_figure, uplift_figure
from harness.report.html_rows import metric_rows, scenario_rows
from harness.report.render_md import context, template
from harness.report.runlist import RUN_LINKS_CAP, RunList
from harness.report.summary import Summary


def render_html(summary: Summary, *, links_from: Path | None = None, runs: RunList | None = None) -> str:
    """The whole page; links to runs are relative to links_from (the folder the page is written to).

    runs: the summary's runs when they are not in it (`runlist.Report`), else they are taken from it.
    """
    if runs is None:
        runs = RunList.of(summary.runs)
    root = Path(summary.header.root)
    base = os.path.relpath(root, links_from) if links_from is not None else str(root)
    ctx = context(summary)
    hv = bool(ctx["hv"])
    ctx.update(
        plotlyjs=get_plotlyjs(),
        uplift_chart=figure_div(uplift_figure(summary), "uplift-chart"),
        heatmap_chart=figure_div(heatmap_figure(summary), "heatmap-chart"),
        tokens_chart=figure_div(tokens_figure(summary), "tokens-chart"),
        scenario_table=scenario_rows(
            summary, ctx["scenario_uplift"], runs.links_html(base), runs.counts, hv=hv, cap=RUN_LINKS_CAP
        ),
        metric_table=metric_rows(summary, hv=hv),
    )
    return template("report.html.j2", html=True).render(ctx)
