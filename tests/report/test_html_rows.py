"""report.html's two long tables (`harness.report.html_rows`) are what the template's own loops wrote,
byte for byte, escaping included: scenario, agent and condition names that carry markup, a version
column, cells with and without an uplift, more runs than the page links."""

from __future__ import annotations

from pathlib import Path

import pytest
from report_tree import CONTROL, add_run

from harness.report.build import build_report
from harness.report.html_rows import metric_rows, scenario_rows
from harness.report.render_md import context, environment
from harness.report.runlist import RUN_LINKS_CAP

LOOPS = """\
{% for c in s.cells %}{% set u = scenario_uplift.get((c.version, c.agent, c.condition, c.key)) %}{% set ck = (c.version, c.key, c.agent, c.condition) %}<tr>{% if hv %}<td>{{ c.version | ver }}</td>{% endif %}<td>{{ c.key }}</td><td>{{ c.agent }}</td><td><code>{{ c.condition }}</code></td><td class="num">{{ c.counts.graded }} / {{ c.counts.runs }}</td><td data-sort="{{ c.passed.value }}">{{ c.passed | rate_ci }}</td><td data-sort="{{ c.usable.value }}">{{ c.usable | rate }}</td>{% if u %}<td class="num" data-sort="{{ u.value }}">{{ u.value | signed }}</td><td class="num">[{{ u.low | signed }}, {{ u.high | signed }}]</td><td class="num" data-sort="{{ u.p_adjusted }}">{{ u | holm }}</td><td class="num">{{ u.only_treatment }} / {{ u.only_control }}</td>{% else %}<td>—</td><td>—</td><td>—</td><td>—</td>{% endif %}<td class="num" data-sort="{{ c.cost.tokens_per_run }}">{{ c.cost.tokens_per_run | num }}</td>
<td class="runs"><details><summary>{{ run_counts.get(ck, 0) }} run(s)</summary>{{ run_links.get(ck, "") }}{% if run_counts.get(ck, 0) > cap %}<div>… {{ run_counts.get(ck, 0) - cap }} more in summary.json</div>{% endif %}</details></td></tr>
{% endfor %}@@
{% for c in s.cells %}{% for name, m in c.metrics.items() %}<tr>{% if hv %}<td>{{ c.version | ver }}</td>{% endif %}<td>{{ c.key }}</td><td>{{ c.agent }}</td><td><code>{{ c.condition }}</code></td><td>{{ name }}</td><td class="num">{{ m.n }}</td><td class="num">{{ m.mean | num(2) }}</td><td class="num">{{ m.stddev | num(2) }}</td><td class="num">{{ m.min | num(2) }}</td><td class="num">{{ m.max | num(2) }}</td></tr>
{% endfor %}{% endfor %}"""
"""The loops as report.html.j2 held them before the rows were formatted in Python: the oracle."""


@pytest.mark.parametrize("versions", [(None,), ("v1<b>", "v2&")])
def test_the_rows_are_the_templates_own(tmp_path: Path, versions: tuple[str | None, ...]) -> None:
    for version in versions:
        for trial in range(1, RUN_LINKS_CAP + 3):
            for cell in (CONTROL, "bin/none/off", "bin/<i>/off"):
                add_run(
                    tmp_path,
                    scenario='s"<x>&',
                    cell=cell,
                    trial=trial,
                    version=version,
                    agent="a<script>",
                    passed=trial % 3 != 0 or cell == "bin/none/off",
                )
        add_run(tmp_path, scenario="lone", cell="bin/none/off", trial=1, version=version, tokens=None)
    report = build_report(tmp_path)
    summary, runs = report.summary, report.runs
    ctx = context(summary)
    links = runs.links_html(".")
    ctx.update(run_links=links, run_counts=runs.counts, cap=RUN_LINKS_CAP)
    expected = environment(html=True).from_string(LOOPS).render(ctx)
    hv = bool(ctx["hv"])
    got = (
        scenario_rows(summary, ctx["scenario_uplift"], links, runs.counts, hv=hv, cap=RUN_LINKS_CAP)
        + "@@\n"
        + metric_rows(summary, hv=hv)
    )
    assert "&lt;script&gt;" in got and "more in summary.json" in got and "<td>—</td>" in got
    assert got == expected
