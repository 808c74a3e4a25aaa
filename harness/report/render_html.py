"""report.html: one self-contained page (plotly.js inlined, no network), sortable tables, run links."""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path
from typing import Any

from plotly.offline import get_plotlyjs

from harness.artifacts.names import VIEW_FILE
from harness.report.charts import figure_div, heatmap_figure, tokens_figure, uplift_figure
from harness.report.render_md import context, environment
from harness.report.summary import RunEntry, Summary

RUN_LINKS_CAP = 25
"""Runs linked per cell in the page; summary.json lists every run."""


def _run_links(
    summary: Summary, links_from: Path | None
) -> dict[tuple[str | None, str, str, str], list[dict[str, Any]]]:
    root = Path(summary.header.root)
    base = os.path.relpath(root, links_from) if links_from is not None else str(root)
    out: dict[tuple[str | None, str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for run in summary.runs:
        key = (run.version, run.scenario, run.agent, run.condition)
        bucket = out[key]
        if len(bucket) < RUN_LINKS_CAP:
            page = VIEW_FILE if VIEW_FILE in run.artifacts else None  # the run's own page, when written
            bucket.append(
                {
                    "run": run,
                    "href": _href(base, run, page),
                    "artifacts": [(a, _href(base, run, a)) for a in run.artifacts if a != VIEW_FILE],
                }
            )
    return out


def _href(base: str, run: RunEntry, artifact: str | None = None) -> str:
    parts = [base, run.dir] + ([artifact] if artifact else [])
    return "/".join(p.strip("/") if i else p.rstrip("/") for i, p in enumerate(parts) if p and p != ".")


def render_html(summary: Summary, *, links_from: Path | None = None) -> str:
    """The whole page; links to runs are relative to links_from (the folder the page is written to)."""
    ctx = context(summary)
    counts: dict[tuple[str | None, str, str, str], int] = defaultdict(int)
    for run in summary.runs:
        counts[(run.version, run.scenario, run.agent, run.condition)] += 1
    ctx.update(
        plotlyjs=get_plotlyjs(),
        uplift_chart=figure_div(uplift_figure(summary), "uplift-chart"),
        heatmap_chart=figure_div(heatmap_figure(summary), "heatmap-chart"),
        tokens_chart=figure_div(tokens_figure(summary), "tokens-chart"),
        run_links=_run_links(summary, links_from),
        run_counts=counts,
        cap=RUN_LINKS_CAP,
    )
    return environment(html=True).get_template("report.html.j2").render(ctx)
