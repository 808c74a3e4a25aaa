"""`run`, `matrix` and `grade` ask the same of generated/ before they start: that it can be read and
is not older than the specs it was compiled from. Each refusal is one line and exit 2, and nothing
runs or is graded by checks the project no longer has.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.artifacts.run_tree import find_runs
from tests.helpers import assay, compiled_copy

ROOT = Path(__file__).resolve().parents[2]
JOB = "smoke/none/none/off/scripted-good/sum-answer/t01"


@pytest.fixture
def compiled(tmp_path: Path) -> Path:
    """A compiled copy of the small valid project (matrix `smoke`, scenario `sum-answer`), run once."""
    dest = compiled_copy(tmp_path / "compiled")
    ran = assay("--project", dest, "matrix", "smoke", "--runs", dest / "runs")
    assert ran.returncode == 0, ran.stderr
    return dest


def _one_line(done: object, needle: str) -> str:
    code, err = done.returncode, done.stderr  # type: ignore[attr-defined]
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and needle in lines[0] and "Traceback" not in err, err
    return str(lines[0])


def _edit(path: Path) -> None:
    path.write_text(path.read_text() + "\nOne more sentence.\n")


@pytest.mark.parametrize("change", [_edit, Path.unlink], ids=["edited", "deleted"])
def test_run_matrix_and_grade_refuse_a_generated_folder_older_than_the_specs(
    compiled: Path, tmp_path: Path, change: Callable[[Path], None]
) -> None:
    runs = compiled / "runs"
    before = {d: (d / "run.json").stat().st_mtime_ns for d in find_runs(runs)}
    changed = compiled / "scenarios" / "sum-answer" / "reference" / "answer.json"
    text = changed.read_text()
    change(changed)
    jobs = tmp_path / "jobs"
    shutil.copytree(compiled / "generated" / "jobs" / "smoke", jobs)
    said = {
        _one_line(assay("--project", compiled, *argv), "generated/ is older than the specs")
        for argv in (
            ("matrix", "smoke", "--runs", runs, "--force"),
            ("run", JOB, "--runs", runs, "--force"),
            ("matrix", "--job-file", jobs, "--runs", runs, "--force"),
            ("grade", runs, "--regrade"),
        )
    }
    assert len(said) == 1 and "scenarios/sum-answer/reference/answer.json changed" in said.pop()
    assert {d: (d / "run.json").stat().st_mtime_ns for d in find_runs(runs)} == before  # nothing ran
    changed.write_text(text)  # the change undone: generated/ is current again
    done = assay("--project", compiled, "grade", runs)
    assert done.returncode in (0, 1) and "reused 2" in done.stdout, done.stdout + done.stderr
    _edit(changed)
    assert assay("--project", compiled, "compile").returncode == 0
    assert assay("--project", compiled, "matrix", "smoke", "--runs", runs).returncode == 0


def test_a_damaged_generated_folder_stops_grade_in_one_line(compiled: Path) -> None:
    runs = compiled / "runs"
    job_file = compiled / "generated" / "jobs" / "smoke" / "sum-answer.json"
    text = job_file.read_text()
    for damaged, name in (
        ("{garbage", "sum-answer.json"),
        (json.dumps({"schema_version": 1}), "sum-answer.json"),
    ):
        job_file.write_text(damaged)
        line = _one_line(assay("--project", compiled, "grade", runs, "--regrade"), str(job_file))
        assert name in line and "assay compile" in line
    job_file.write_text(text)
    manifest = compiled / "generated" / "manifest.json"
    manifest.write_text("{garbage")
    for argv in (("grade", runs), ("matrix", "smoke", "--runs", runs)):
        line = _one_line(assay("--project", compiled, *argv), str(manifest))
        assert "not valid JSON" in line and "assay compile" in line


@pytest.mark.parametrize("text", ["[]", "null", "{}", '{"schema_version": "x"}'])
@pytest.mark.parametrize("which", ["manifest.json", "jobs/smoke/sum-answer.json"])
def test_a_generated_file_that_is_not_one_is_called_damaged(compiled: Path, which: str, text: str) -> None:
    path = compiled / "generated" / which
    path.write_text(text)
    for argv in (("matrix", "smoke", "--runs", compiled / "runs"), ("grade", compiled / "runs", "--regrade")):
        done = assay("--project", compiled, *argv)
        line = _one_line(done, str(path))
        assert "newer" not in line and "assay compile" in line
