"""`assay report` and `assay plan` as real subprocesses over real run trees."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from report_tree import CONTROL, add_run

from harness.report import SUMMARY_SCHEMA, build_summary
from harness.report.render_md import render_markdown
from tests.helpers import assay

BIN = "bin/none/off"


def small_tree(root: Path) -> Path:
    for t in (1, 2):
        add_run(root, scenario="s", cell=CONTROL, trial=t, passed=t == 1)
        add_run(root, scenario="s", cell=BIN, trial=t, passed=True)
    return root


def test_markdown_quotes_rates_with_counts(tmp_path: Path) -> None:
    text = render_markdown(build_summary(small_tree(tmp_path)))
    assert "0.50 (1/2) [0.09, 0.91]" in text
    assert "1.00 (2/2) [0.34, 1.00]" in text
    assert "Smallest graded count of any cell: **n = 2**" in text
    assert "none/none/off → bin/none/off" in text
    assert "**+0.50**" in text
    assert "## Diagnostics" in text and "## Findings by layer" in text


def test_markdown_without_control_says_so(tmp_path: Path) -> None:
    add_run(tmp_path, scenario="s", cell=BIN, trial=1, passed=True)
    text = render_markdown(build_summary(tmp_path))
    assert "**No control:**" in text and "## Uplift" not in text


def test_report_command_writes_files(tmp_path: Path) -> None:
    tree = small_tree(tmp_path / "tree")
    out = tmp_path / "out"
    proc = assay("report", tree, "--format", "md,json", "--out", out)
    assert proc.returncode == 0, proc.stderr
    assert (out / "report.md").is_file()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["schema_version"] == SUMMARY_SCHEMA and summary["header"]["totals"]["graded"] == 4
    again = assay("report", out / "summary.json", "--format", "md", "--out", tmp_path / "again")
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "again" / "report.md").read_text() == (out / "report.md").read_text()


def test_report_command_errors(tmp_path: Path) -> None:
    assert assay("report", tmp_path / "missing").returncode == 2
    (tmp_path / "empty").mkdir()
    assert assay("report", tmp_path / "empty").returncode == 3
    bad = assay("report", small_tree(tmp_path / "t"), "--format", "pdf")
    assert bad.returncode == 2 and "valid: md, json, html, junit" in bad.stderr


def test_future_summary_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "summary.json"
    path.write_text(json.dumps({"schema_version": SUMMARY_SCHEMA + 1}))
    proc = assay("report", path, "--format", "md")
    assert proc.returncode == 2 and "newer than this assay" in proc.stderr
    assert "Traceback" not in proc.stderr
    path.write_text(json.dumps({"schema_version": 1, "header": {}}))
    proc = assay("report", path, "--format", "md")
    assert proc.returncode == 2 and "run `assay report` on the run tree again" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_regrade_without_grader_is_a_usage_error(tmp_path: Path) -> None:
    try:
        import harness.grade  # noqa: F401
    except ModuleNotFoundError:
        proc = assay("report", small_tree(tmp_path), "--regrade", "--format", "md")
        assert proc.returncode == 2 and "grader" in proc.stderr
    else:
        pytest.skip("the grader is installed; regrade is exercised in test_report_regrade")


def test_plan_command() -> None:
    proc = assay("plan", "--control-rate", "0.5", "--uplift", "0.2", "--scenarios", "10")
    assert proc.returncode == 0, proc.stderr
    assert "graded runs per condition: 93" in proc.stdout and "trials per cell: 10" in proc.stdout
    proc = assay("plan", "--control-rate", "0.5", "--runs", "93")
    assert proc.returncode == 0 and "+0.2" in proc.stdout
    assert assay("plan", "--control-rate", "0.9", "--uplift", "0.2").returncode == 2
    assert assay("plan", "--control-rate", "0.5", "--runs", "2").returncode == 1


def test_junit_one_case_per_trial(tmp_path: Path) -> None:
    from xml.etree import ElementTree as ET

    from harness.artifacts.records import RunStatus

    tree = small_tree(tmp_path / "tree")
    add_run(
        tree, scenario="s", cell=BIN, trial=3, status=RunStatus.FAILED_TO_RUN, passed=False, error="crash"
    )
    add_run(tree, scenario="s", cell=BIN, trial=4, passed=False, invalid="canary")
    proc = assay("report", tree, "--format", "junit", "--out", tmp_path)
    assert proc.returncode == 0, proc.stderr
    root = ET.parse(tmp_path / "junit.xml").getroot()
    assert (root.get("tests"), root.get("failures"), root.get("errors"), root.get("skipped")) == (
        "6",
        "1",
        "1",
        "1",
    )
    cases = root.findall(".//testcase")
    assert len(cases) == 6
    failed = [c for c in cases if c.find("failure") is not None]
    assert [c.get("name") for c in failed] == ["s trial 2"]


def test_versions_and_agents_render(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    for version, ctrl in (("v1", [1, 0]), ("v2", [1, 1])):
        for agent in ("claude", "codex"):
            for t in (1, 2):
                add_run(
                    tree,
                    scenario="s",
                    cell=CONTROL,
                    trial=t,
                    passed=bool(ctrl[t - 1]),
                    version=version,
                    agent=agent,
                )
                add_run(tree, scenario="s", cell=BIN, trial=t, passed=True, version=version, agent=agent)
    (tree / "versions.json").write_text(
        json.dumps({"schema_version": 1, "baseline": "v1", "candidate": "v2"})
    )
    out = tmp_path / "out"
    proc = assay("report", tree, "--format", "md,html,json", "--out", out, "--jobs", "2")
    assert proc.returncode == 0, proc.stderr
    md = (out / "report.md").read_text()
    assert "## Version comparison: v1 → v2" in md
    assert "| claude | 0.50 (1/2) [0.09, 0.91] | 1.00 (2/2) [0.34, 1.00] | +0.50" in md  # control drift
    html = (out / "report.html").read_text()
    assert "Version comparison" in html
    assert "v1 · claude · bin/none/off" in html.replace("\\u00b7", "·").replace("\\u002f", "/")  # chart label
    summary = json.loads((out / "summary.json").read_text())
    assert {g["agent"] for g in summary["groups"] if g["by"] == "condition"} == {"claude", "codex"}


def test_terminal_table_metrics_are_real(tmp_path: Path) -> None:
    from harness.artifacts.grade_sections import ToolUse
    from harness.artifacts.records import RunnerMetrics
    from harness.report.terminal import REPORTED_METRICS, render_terminal

    add_run(tmp_path, scenario="s", cell=CONTROL, trial=1, passed=False)
    add_run(
        tmp_path,
        scenario="s",
        cell=BIN,
        trial=1,
        passed=True,
        sections={"tool_use": ToolUse(present=True, invocations=4)},
    )
    summary = build_summary(tmp_path)
    row = next(g for g in summary.groups if g.by == "condition" and g.condition == BIN)
    for name in REPORTED_METRICS:
        assert name in row.metrics, name
        assert name in RunnerMetrics.model_fields or name == "tool_invocations"
    text = render_terminal(summary)
    assert "1.00 (1/1)" in text and "+1.00 [" in text and "control" in text


def test_plan_from_a_summary(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert assay("report", small_tree(tmp_path / "tree"), "--format", "json", "--out", out).returncode == 0
    proc = assay("plan", "--from", out / "summary.json", "--uplift", "0.2")
    assert proc.returncode == 0, proc.stderr
    assert (
        "scripted on the control none/none/off passed 0.50 (1/2)" in proc.stdout
        and "graded runs per condition: 93" in proc.stdout
    )
    assert assay("plan", "--uplift", "0.2").returncode == 2


def test_plan_uses_the_control_of_the_agent_in_question(tmp_path: Path) -> None:
    # The oracle (all pass) and the no-op (all fail) are sanity bounds: pooling them into the
    # control rate would plan for an agent that does not exist.
    tree = tmp_path / "tree"
    for t in (1, 2, 3, 4):
        add_run(tree, scenario="s", cell=CONTROL, trial=t, passed=t == 1)
        add_run(tree, scenario="s", cell=BIN, trial=t, passed=True)
        add_run(tree, scenario="s", cell=CONTROL, trial=t, agent="other", passed=t <= 3)
        add_run(tree, scenario="s", cell=CONTROL, trial=t, agent="oracle", passed=True, sanity="pass")
        add_run(tree, scenario="s", cell=CONTROL, trial=t, agent="noop", passed=False, sanity="fail")
    out = tmp_path / "out"
    assert assay("report", tree, "--format", "json", "--out", out).returncode == 0
    proc = assay("plan", "--from", out / "summary.json", "--uplift", "0.2", "--agent", "scripted")
    assert proc.returncode == 0, proc.stderr
    assert "scripted on the control none/none/off passed 0.25 (1/4)" in proc.stdout
    assert "control 0.25 -> 0.45" in proc.stdout
    every = assay("plan", "--from", out / "summary.json", "--uplift", "0.2")
    assert every.returncode == 0, every.stderr
    assert "other on the control none/none/off passed 0.75 (3/4)" in every.stdout
    assert "oracle" not in every.stdout and "noop" not in every.stdout
    refused = assay("plan", "--from", out / "summary.json", "--uplift", "0.2", "--agent", "oracle")
    assert refused.returncode == 2 and "sanity agent" in refused.stderr


def test_atomic_writes_are_readable_by_others(tmp_path: Path) -> None:
    from harness.artifacts.store import write_atomic

    target = tmp_path / "report.md"
    write_atomic(target, "x\n")
    assert target.stat().st_mode & 0o777 == 0o644
