"""A new user's first scenario runs in the demo at once: `assay new scenario x --split test`, then
what `nox -s demo` runs (compile, the demo matrix, the report), with no other edit."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.artifacts.records import read_grade, read_run
from harness.artifacts.run_tree import find_runs
from tests.helpers import assay

REPO = Path(__file__).resolve().parents[2]
PARTS = ("specs", "scenarios", "tools", "guides", "wiki")


@pytest.mark.slow
def test_a_new_test_scenario_runs_in_the_demo_and_scripted_good_passes_it(tmp_path: Path) -> None:
    project = tmp_path / "project"
    for part in PARTS:
        shutil.copytree(REPO / part, project / part)
    made = assay("--project", project, "new", "scenario", "greet-user", "--split", "test")
    assert made.returncode == 0, made.stderr
    assert assay("--project", project, "compile").returncode == 0
    runs = project / "runs" / "demo"
    done = assay(
        "--project", project, "matrix", "demo", "--scenario", "greet-user", "--trials", "2", "--parallel", "4"
    )
    assert done.returncode == 0, done.stderr
    graded = {}
    for run_dir in find_runs(runs):
        record, grade = read_run(run_dir), read_grade(run_dir)
        assert grade is not None, run_dir
        graded[(record.agent, record.cell, record.trial)] = grade
    agents = {a for a, _, _ in graded}
    assert agents == {"scripted-good", "scripted-weak", "oracle", "noop"}
    assert all(g.status == "graded" for g in graded.values()), {k: g.status for k, g in graded.items()}
    good = {cell for (agent, cell, _), g in graded.items() if agent == "scripted-good" and g.passed}
    assert good, "scripted-good passed the new scenario in no cell"
    assert not any(g.passed for (agent, _, _), g in graded.items() if agent == "noop")
    report = assay("--project", project, "report", runs, "--out", runs)
    assert report.returncode == 0, report.stderr
    assert "greet-user" in (runs / "report.md").read_text(encoding="utf-8")
