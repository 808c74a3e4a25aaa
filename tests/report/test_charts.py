"""The page's figures are plain plotly.js JSON (`harness.report.charts`): plotly's own figure class
takes each of them as it is (every property valid, nothing coerced), and no text of a run can close
the script that draws them."""

from __future__ import annotations

import json
from pathlib import Path

import plotly.graph_objects as go
import pytest
from report_tree import CONTROL, add_run

from harness.report import build_summary
from harness.report.charts import figure_div, heatmap_figure, template, tokens_figure, uplift_figure

HOSTILE = "</script><script>window.__pwned=1</script>"


def tree(root: Path, *, control: bool) -> Path:
    for scenario in ("a", HOSTILE.replace("/", "-")):
        for t in (1, 2, 3):
            for cell in (CONTROL, "bin/none/off"):
                add_run(
                    root,
                    scenario=scenario,
                    cell=cell,
                    trial=t,
                    passed=t < 3 or cell != CONTROL,
                    control=(cell == CONTROL) if control else False,
                    agent=HOSTILE.replace("/", "_"),
                )
            add_run(root, scenario=scenario, cell=CONTROL, trial=t, agent="oracle", sanity="pass")
    return root


@pytest.mark.parametrize("control", [True, False])
def test_plotly_takes_every_figure_as_it_is(tmp_path: Path, control: bool) -> None:
    summary = build_summary(tree(tmp_path, control=control))
    for make in (uplift_figure, heatmap_figure, tokens_figure):
        fig = make(summary)
        checked = go.Figure(fig).to_plotly_json()  # raises on any property plotly.js does not know
        checked["layout"].pop("template", None)
        assert json.loads(json.dumps(checked)) == json.loads(json.dumps(fig)), make.__name__


def test_no_run_text_closes_the_script(tmp_path: Path) -> None:
    summary = build_summary(tree(tmp_path, control=True))
    html = "".join(
        figure_div(make(summary), f"c{i}")
        for i, make in enumerate((uplift_figure, heatmap_figure, tokens_figure))
    )
    assert html.count("<script>") == html.count("</script>") == 3
    assert "window.__pwned" in html and "<script>window" not in html
    look = json.loads(template())
    assert set(look) == {"data", "layout"} and look["layout"]["plot_bgcolor"] == "#E5ECF6"
    assert html.count('{"template":' + template()) == 3  # plotly's default look, as before
