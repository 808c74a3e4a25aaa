"""`assay report --regrade` with the real grader on a real compiled project: no agent starts."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest

from tests.helpers import BARE_ENV, assay

pytest.importorskip("harness.grade", reason="the grader (harness.grade) is not installed")

from compiler.contract import iter_jobs
from tests.grade.helpers import make_run
from tests.grade.project import SCENARIO, compile_project, write_project

WORK = {
    1: "def handler(x):\n    return x + 1\n",  # passes while the hidden test expects 2
    2: "def handler(x):\n    return x + 2\n",  # passes once it expects 3
    3: "def handler(x):\n    return x +\n",  # never passes
}


def summary(out: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads((out / "summary.json").read_text())
    return data


def test_report_regrade(tmp_path: Path) -> None:
    marker = tmp_path / "AGENT-STARTED"
    project = write_project(tmp_path / "proj", marker=marker)
    runs = project / "runs"
    for job in iter_jobs(project / "generated"):
        make_run(runs / f"trial-{job.trial:02d}", job, workspace={"app/main.py": WORK[job.trial]})

    report = partial(assay, "--project", project, "report", "runs", cwd=project, env=BARE_ENV)

    # No grade.json yet: the report grades what needs grading.
    first = report("--format", "json,md", "--out", "out1")
    assert first.returncode == 0, first.stderr
    s1 = summary(project / "out1")
    cell = s1["cells"][0]  # type: ignore[index]
    assert (cell["passed"]["k"], cell["passed"]["n"]) == (1, 3)
    assert [g["key"] for g in s1["groups"] if g["by"] == "split"] == ["test"]  # type: ignore[attr-defined, union-attr]
    assert [g["key"] for g in s1["groups"] if g["by"] == "family"] == ["arith"]  # type: ignore[attr-defined, union-attr]

    # Regrading an unchanged tree changes nothing and flags nothing.
    same = report("--regrade", "--format", "json", "--out", "out2")
    assert same.returncode == 0, same.stderr
    kinds = {d["kind"] for d in summary(project / "out2")["diagnostics"]}  # type: ignore[attr-defined, union-attr]
    assert not kinds & {"regrade", "flaky-check", "regrade-changed-grader"}

    # The hidden check changes: a regrade flips trials 1 and 2, reported as a grader change, not as flakiness.
    (project / "scenarios" / "add-one" / "scenario.yaml").write_text(SCENARIO.format(expected=3))
    compile_project(project)
    changed = report("--regrade", "--format", "json,md", "--out", "out3")
    assert changed.returncode == 0, changed.stderr
    s3 = summary(project / "out3")
    assert s3["header"]["regraded"] is True  # type: ignore[index]
    diags = {d["kind"]: d for d in s3["diagnostics"]}  # type: ignore[attr-defined, union-attr]
    assert "flaky-check" not in diags and "regrade" not in diags
    assert sorted(diags["regrade-changed-grader"]["evidence"]) == ["trial-01", "trial-02"]
    cell = s3["cells"][0]  # type: ignore[index]
    assert (cell["passed"]["k"], cell["passed"]["n"]) == (1, 3)
    by_trial = {r["trial"]: r["passed"] for r in s3["runs"]}  # type: ignore[attr-defined, union-attr]
    assert by_trial == {1: False, 2: True, 3: False}
    assert "(regraded for this report)" in (project / "out3" / "report.md").read_text()
    assert not marker.exists()  # no agent was started
