"""Must-show 1: a stored run tree graded, then regraded after a check changed; no agent starts."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from compiler.contract import iter_jobs
from harness.artifacts.names import INDEX_FILE
from harness.artifacts.run_tree import find_runs
from tests.grade.helpers import make_run, strip_times
from tests.grade.project import SCENARIO, compile_project, write_project
from tests.helpers import BARE_ENV, assay

# trial -> what the agent left in app/main.py
WORK = {
    1: "def handler(x):\n    return x + 1\n",  # right under the original check
    2: "def handler(x):\n    return x + 2\n",  # right under the changed check
    3: "def handler(x):\n    return x +\n",  # broken: wrong under both
}


def _tree_state(root: Path) -> dict[str, str]:
    """sha256 of every file under the runs except grade.json and what is derived from it (the run's
    page, view.html, and the tree's results index)."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name not in ("grade.json", "view.html") and not p.name.startswith(INDEX_FILE)
    }


def _grades(root: Path) -> dict[int, dict[str, object]]:
    out = {}
    for run in find_runs(root):
        trial = json.loads((run / "run.json").read_text())["trial"]
        out[trial] = json.loads((run / "grade.json").read_text())
    return out


def _verdicts(root: Path) -> dict[int, dict[str, str]]:
    return {t: {c["id"]: c["outcome"] for c in g["checks"]} for t, g in _grades(root).items()}


@pytest.mark.slow
def test_regrade_after_a_check_change(tmp_path: Path) -> None:
    marker = tmp_path / "agent-starts.log"
    project = write_project(tmp_path / "proj", marker=marker)
    runs = project / "runs"
    # the real runner; it grades each trial
    ran = assay("--project", project, "matrix", "--runs", "runs", cwd=project, env=BARE_ENV)
    assert "failed 2, passed 1" in ran.stderr, ran.stderr  # trials 2 and 3 fail the original check
    starts = marker.read_text()
    assert starts.count("started") == 3
    before = _tree_state(runs)

    first = assay("--project", project, "grade", "runs", cwd=project, env=BARE_ENV)
    assert first.returncode == 1 and "reused 3" in first.stdout, first.stdout + first.stderr
    assert _verdicts(runs) == {
        1: {"compiles": "pass", "hidden-tests": "pass", "keeps-api": "pass"},
        2: {"compiles": "pass", "hidden-tests": "fail", "keeps-api": "pass"},
        3: {"compiles": "fail", "hidden-tests": "fail", "keeps-api": "pass"},
    }
    graded = _grades(runs)

    # regrading the unchanged tree twice gives identical grades, timings aside
    assay("--project", project, "grade", "runs", "--regrade", cwd=project, env=BARE_ENV)
    once = {t: strip_times(g) for t, g in _grades(runs).items()}
    assay("--project", project, "grade", "runs", "--regrade", cwd=project, env=BARE_ENV)
    twice = {t: strip_times(g) for t, g in _grades(runs).items()}
    assert once == twice == {t: strip_times(g) for t, g in graded.items()}

    # the check changes in the spec; the project is recompiled
    scen = project / "scenarios" / "add-one" / "scenario.yaml"
    scen.write_text(SCENARIO.format(expected=3))
    uncompiled = assay("--project", project, "grade", "runs", "--regrade", cwd=project, env=BARE_ENV)
    assert (
        uncompiled.returncode == 2 and "assay compile" in uncompiled.stderr
    )  # never graded by a stale compile
    compile_project(project)

    flagged = assay("--project", project, "grade", "runs", cwd=project, env=BARE_ENV)
    assert "stale 3" in flagged.stdout and "--regrade" in flagged.stderr
    assert _verdicts(runs)[1]["hidden-tests"] == "pass"  # kept as it was, only flagged

    regraded = assay("--project", project, "grade", "runs", "--regrade", cwd=project, env=BARE_ENV)
    assert "regraded 3" in regraded.stdout, regraded.stdout
    after = _verdicts(runs)
    assert (
        after[1]["hidden-tests"] == "fail" and after[2]["hidden-tests"] == "pass"
    )  # flipped where they should
    assert after[3] == _verdicts(runs)[3] == {"compiles": "fail", "hidden-tests": "fail", "keeps-api": "pass"}
    new = _grades(runs)
    assert all(new[t]["grader_hash"] != graded[t]["grader_hash"] for t in WORK)
    assert new[2]["passed"] is True and new[1]["passed"] is False

    # no agent was started by grading: the agent notes every start, and nothing but grade.json changed
    assert marker.read_text() == starts
    assert _tree_state(runs) == before
    assert "stale 0" in assay("--project", project, "grade", "runs", cwd=project, env=BARE_ENV).stdout


def test_unknown_scenario_is_ungradeable(tmp_path: Path) -> None:
    project = write_project(tmp_path / "proj", marker=tmp_path / "marker", trials=1)
    (job,) = iter_jobs(project / "generated")
    gone = job.model_copy(update={"scenario": job.scenario.model_copy(update={"id": "deleted-scenario"})})
    run = make_run(project / "runs" / "t1", gone, workspace={"app/main.py": WORK[1]})
    done = assay("--project", project, "grade", "runs", cwd=project, env=BARE_ENV)
    assert done.returncode == 1 and "ungradeable 1" in done.stdout
    grade = json.loads((run / "grade.json").read_text())
    assert grade["status"] == "ungradeable" and "deleted-scenario" in grade["error"]
