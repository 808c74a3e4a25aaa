"""A grading session (`harness.grade.session.Grading`): the same verdicts as grading each run alone,
one sandbox launch for many runs, and nothing of one run in the next."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from compiler.contract import Limits
from harness.grade import grade_run, grade_tree
from harness.grade.session import Grading
from tests.grade.helpers import BROKEN_PY, VALID_PY, command, demo_job, make_project, make_run, scenario

HIDDEN_TEST = "import sys\nsys.path.insert(0, 'app')\nfrom main import handler\nassert handler(1) == 2\n"
CHECKS = [
    command("compiles", "python -m py_compile app/main.py", authority="python"),
    command("hidden-tests", "python test_hidden.py", authority="python"),
    # what an earlier run's agent left in its workspace, or a check's HOME, is not in this run's
    command("nothing-of-others", 'test ! -e extra.txt && test -z "$(ls -A $HOME)" && touch $HOME/dotfile'),
    command("writes", "echo changed > app/main.py && echo more > extra2.txt"),
]


def _runs(tmp_path: Path) -> list[Path]:
    scen = scenario(CHECKS, grader="scenarios/demo/grader")
    workspaces = [
        {"app/main.py": VALID_PY, "extra.txt": "left by this run's agent\n"},
        {"app/main.py": BROKEN_PY},
        {"app/main.py": VALID_PY},
    ]
    snapshots = [(10.0, "app/main.py", BROKEN_PY), (20.0, "app/main.py", VALID_PY)]
    return [
        make_run(tmp_path / f"run-{n}", demo_job(scen, trial=n + 1), workspace=ws, snapshots=snapshots)
        for n, ws in enumerate(workspaces)
    ]


def _verdicts(run: Path, project: Path, grading: Grading | None) -> tuple[object, ...]:
    grade = grade_run(run, project=project, regrade=True, grading=grading)
    checks = tuple((c.id, c.outcome, c.message) for c in grade.checks)
    snaps = tuple((v.index, v.valid, v.message) for v in grade.snapshots.verdicts)
    return grade.passed, checks, snaps, grade.details["check_isolation"]


def test_a_session_grades_as_each_run_alone_and_keeps_nothing_between_runs(tmp_path: Path) -> None:
    project = make_project(
        tmp_path / "proj",
        seed={"app/main.py": "def handler(x):\n    return x\n"},
        grader={"test_hidden.py": HIDDEN_TEST},
    )
    runs = _runs(tmp_path)
    alone = [_verdicts(run, project, None) for run in runs]
    with Grading() as grading:
        together = [_verdicts(run, project, grading) for run in runs]
        launches = grading.servers.launches
    assert together == alone
    assert [v[0] for v in together] == [False, False, True]
    assert [c[1] for c in together[0][1]] == ["pass", "pass", "fail", "pass"]  # run A: its own extra.txt
    assert [c[1] for c in together[2][1]] == ["pass", "pass", "pass", "pass"]  # run C: nothing of A's
    assert [s[1] for s in together[2][2]] == [False, True]  # the snapshot pass too, in the session's folder
    if together[0][3] not in ("bwrap", "unshare"):
        pytest.skip(f"checks ran under {together[0][3]}: no sandbox to keep a server in")
    assert launches == 1  # one server for every run, its snapshot pass included
    assert all(not (run / "workspace" / "extra2.txt").exists() for run in runs)


def test_grade_tree_grades_in_sessions_and_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = make_project(
        tmp_path / "proj",
        seed={"app/main.py": "def handler(x):\n    return x\n"},
        grader={"test_hidden.py": HIDDEN_TEST},
    )
    runs = _runs(tmp_path / "runs")
    alone = [_verdicts(run, project, None) for run in runs]
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))  # where the sessions make their folders
    for parallel in (1, 2):
        entries = grade_tree(tmp_path / "runs", project=project, regrade=True, parallel=parallel)
        assert [e.run_dir for e in entries] == runs
        got = [(e.grade.passed, tuple((c.id, c.outcome, c.message) for c in e.grade.checks)) for e in entries]
        assert got == [(v[0], v[1]) for v in alone]
        assert list(scratch.iterdir()) == []  # every session ended: its folder and its servers gone


@pytest.mark.skipif(
    os.geteuid() != 0, reason="the scratch's size limit needs a tmpfs, which only root mounts"
)
def test_a_snapshot_copy_the_scratch_cannot_hold_is_made_elsewhere(tmp_path: Path) -> None:
    # 1 MB of workspace: a 2 MB scratch holds the graded copy but not a second one for the snapshots
    size = "test $(wc -c < big.bin) = 1200000"
    checks = [command("compiles", "python -m py_compile app/main.py", authority="python")]
    checks.append(command("whole", size, authority="python"))
    scen = scenario(checks)
    job = demo_job(scen).model_copy(update={"limits": Limits(workspace_mb=1)})
    snapshots = [(10.0, "app/main.py", BROKEN_PY), (20.0, "app/main.py", VALID_PY)]
    files = {"app/main.py": VALID_PY, "big.bin": "x" * 1_200_000}
    run = make_run(tmp_path / "run", job, workspace=files, snapshots=snapshots)
    project = make_project(tmp_path / "proj", seed={"app/main.py": "def handler(x):\n    return x\n"})
    alone = _verdicts(run, project, None)
    with Grading() as grading:
        assert _verdicts(run, project, grading) == alone
    assert [s[1] for s in alone[2]] == [False, True]  # the first snapshot fails to compile, not `whole`
    assert "whole" not in alone[2][0][2]
