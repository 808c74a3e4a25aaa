"""A damaged record in a run tree is data, never a traceback that blocks the tree: a run.json that
cannot be read is counted unreadable and its trial run again, a grade.json that is not a whole grade
is no grade (graded again), whatever shape the damage takes.

Real runs of the fixture project through the real CLI.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from compiler.contract import Job
from harness.artifacts.names import GRADE_FILE, RUN_FILE
from harness.artifacts.records import RunStatus, read_grade, read_run
from harness.artifacts.run_tree import find_runs, run_dir_for
from tests.helpers import assay, command_agent, make_job


def _jobs(folder: Path, n: int = 2) -> list[Job]:
    folder.mkdir(parents=True, exist_ok=True)
    jobs = [make_job(agent=command_agent("exit 0"), trial=t, matrix="m") for t in range(1, n + 1)]
    for job in jobs:
        (folder / f"t{job.trial:02d}.json").write_text(job.model_dump_json())
    return jobs


def _matrix(project: Path, tmp_path: Path) -> tuple[int, str]:
    done = assay("--project", project, "matrix", "--job-file", tmp_path / "jobs", "--runs", tmp_path / "runs")
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stderr


@pytest.fixture
def tree(project: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A finished tree of two passing trials: (its first run, the same run's pristine copy)."""
    (job, _second) = _jobs(tmp_path / "jobs")
    code, said = _matrix(project, tmp_path)
    assert code == 0, said
    run_dir = run_dir_for(job, tmp_path / "runs")
    grade = read_grade(run_dir)
    assert grade is not None and grade.passed
    return run_dir, tmp_path


NOT_OBJECTS = ["[]", "null", "7", '"run"']
"""Valid JSON, not a record."""


@pytest.mark.parametrize("text", NOT_OBJECTS)
def test_a_run_json_that_is_not_an_object_is_unreadable_and_rerun(
    project: Path, tree: tuple[Path, Path], text: str
) -> None:
    run_dir, tmp_path = tree
    (run_dir / RUN_FILE).write_text(text)
    graded = assay("--project", project, "grade", tmp_path / "runs", "--regrade")
    assert graded.returncode == 1 and "Traceback" not in graded.stderr, graded.stderr
    grade = read_grade(run_dir)
    assert grade is not None and grade.status is RunStatus.UNGRADEABLE and "run.json" in (grade.error or "")
    reported = assay("report", tmp_path / "runs", "--out", tmp_path / "out")
    assert reported.returncode == 0, reported.stderr
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["header"]["totals"]["unreadable"] == 1
    code, said = _matrix(project, tmp_path)  # resume: the trial runs again, its run.json is whole
    assert code == 0, said
    assert read_run(run_dir).exit_code == 0
    healed = read_grade(run_dir)
    assert healed is not None and healed.passed


@pytest.mark.parametrize("text", NOT_OBJECTS)
def test_a_grade_json_that_is_not_an_object_is_no_grade(
    project: Path, tree: tuple[Path, Path], text: str
) -> None:
    run_dir, tmp_path = tree
    started = read_run(run_dir).started_at
    (run_dir / GRADE_FILE).write_text(text)
    code, said = _matrix(project, tmp_path)
    assert code == 0 and "1 finished trial(s) without a grade are graded" in said, said
    assert read_run(run_dir).started_at == started  # graded, not run again
    for argv in (("grade", run_dir), ("grade", run_dir, "--regrade")):
        (run_dir / GRADE_FILE).write_text(text)
        done = assay("--project", project, *argv)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
        grade = read_grade(run_dir)
        assert grade is not None and grade.passed


@pytest.mark.parametrize(
    "kept",
    [
        {"status": "graded"},
        {"status": "graded", "passed": True},
        {"status": "graded", "passed": True, "usable": True, "checks": []},
    ],
)
def test_a_grade_missing_its_verdict_is_regraded_not_counted_a_failure(
    project: Path, tree: tuple[Path, Path], kept: dict[str, object]
) -> None:
    run_dir, tmp_path = tree
    started = read_run(run_dir).started_at
    partial = json.dumps({"schema_version": 1, **kept})
    (run_dir / GRADE_FILE).write_text(partial)
    assert read_grade(run_dir) is None
    code, said = _matrix(project, tmp_path)
    assert code == 0 and "1 finished trial(s) without a grade are graded" in said, said
    assert read_run(run_dir).started_at == started
    regraded = read_grade(run_dir)
    assert regraded is not None and regraded.passed and regraded.grader_hash
    # the report grades it again too: a pass stays a pass
    (run_dir / GRADE_FILE).write_text(partial)
    shutil.rmtree(tmp_path / "out", ignore_errors=True)
    reported = assay("--project", project, "report", tmp_path / "runs", "--out", tmp_path / "out")
    assert reported.returncode == 0, reported.stderr
    totals = json.loads((tmp_path / "out" / "summary.json").read_text())["header"]["totals"]
    assert (totals["runs"], totals["graded"], totals["ungradeable"]) == (2, 2, 0), totals
    again = read_grade(run_dir)
    assert again is not None and again.passed
    # and `assay grade` without --regrade grades it rather than reuse it
    (run_dir / GRADE_FILE).write_text(partial)
    done = assay("--project", project, "grade", run_dir)
    assert done.returncode == 0 and "graded 1" in done.stdout, done.stdout + done.stderr


def test_a_folder_named_run_json_is_counted_unreadable_and_the_trial_rerun(
    project: Path, tree: tuple[Path, Path]
) -> None:
    run_dir, tmp_path = tree
    (run_dir / RUN_FILE).unlink()
    (run_dir / RUN_FILE).mkdir()
    (run_dir / RUN_FILE / "x").write_text("")
    assert run_dir in find_runs(tmp_path / "runs")
    reported = assay("report", tmp_path / "runs", "--out", tmp_path / "out")
    assert reported.returncode == 0 and "Traceback" not in reported.stderr, reported.stderr
    totals = json.loads((tmp_path / "out" / "summary.json").read_text())["header"]["totals"]
    assert (totals["runs"], totals["unreadable"]) == (2, 1), totals
    graded = assay("--project", project, "grade", tmp_path / "runs", "--regrade")
    assert "Traceback" not in graded.stderr and "ungradeable 1" in graded.stdout, graded.stdout
    code, said = _matrix(project, tmp_path)
    assert code == 0, said
    assert (run_dir / RUN_FILE).is_file() and read_run(run_dir).exit_code == 0
    grade = read_grade(run_dir)
    assert grade is not None and grade.passed
    code, said = _matrix(project, tmp_path)  # and it stays healed
    assert code == 0 and "nothing to run" in said, said


def test_a_folder_named_grade_json_is_replaced_by_the_grade(project: Path, tree: tuple[Path, Path]) -> None:
    run_dir, tmp_path = tree
    (run_dir / GRADE_FILE).unlink()
    (run_dir / GRADE_FILE).mkdir()
    code, said = _matrix(project, tmp_path)
    assert code == 0 and "1 finished trial(s) without a grade are graded" in said, said
    grade = read_grade(run_dir)
    assert grade is not None and grade.passed
    (run_dir / GRADE_FILE).unlink()
    (run_dir / GRADE_FILE).mkdir()
    done = assay("--project", project, "grade", tmp_path / "runs")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert (run_dir / GRADE_FILE).is_file()
