"""A full disk under `assay report --out` or under a tree being graded ends the command the way it
ends `assay matrix`: one line naming the path, exit 74, nothing half-written, nothing lost."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
from pathlib import Path

import pytest

from harness.artifacts.names import GRADE_FILE
from harness.artifacts.records import read_grade
from harness.artifacts.run_tree import find_runs
from tests.helpers import assay, command_agent, make_job
from tests.mounting import tmpfs


@pytest.fixture
def small_disk(root_mounts: Path) -> Path:
    """A 32 MiB tmpfs (room for a report page) mounted for the test (root only), detached after it."""
    return tmpfs(root_mounts / "disk", "32m")


def _fill(disk: Path) -> Path:
    """Fill the disk to its last byte; the filler, to free it again."""
    filler = disk / "filler"
    with filler.open("wb") as fh, contextlib.suppress(OSError):
        while True:
            fh.write(b"\0" * 65536)
            fh.flush()
    return filler


def _runs(project: Path, runs: Path) -> None:
    jobs = runs.parent / "jobs"
    jobs.mkdir()
    for trial in (1, 2):
        job = make_job(agent=command_agent("exit 0"), trial=trial, matrix="m")
        (jobs / f"t{trial:02d}.json").write_text(job.model_dump_json())
    done = assay("--project", project, "matrix", "--job-file", jobs, "--runs", runs)
    assert done.returncode == 0, done.stderr


def _said(done: subprocess.CompletedProcess[str], where: Path) -> str:
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 74 and "Traceback" not in done.stderr, done.stderr
    assert len(lines) == 1 and "No space left on device" in lines[0] and str(where) in lines[0], done.stderr
    return lines[0]


def _staged(folder: Path) -> list[Path]:
    return [p for p in folder.rglob(".*.tmp")]


def test_a_report_onto_a_full_disk_is_one_line_and_exit_74(
    project: Path, tmp_path: Path, small_disk: Path
) -> None:
    _runs(project, tmp_path / "runs")
    out = small_disk / "report"
    out.mkdir()
    filler = _fill(small_disk)
    line = _said(assay("report", tmp_path / "runs", "--out", out), out)
    assert "no report file was replaced" in line
    assert not list(out.iterdir())  # nothing half-written left behind
    filler.unlink()
    done = assay("report", tmp_path / "runs", "--out", out)
    assert done.returncode == 0 and (out / "summary.json").is_file(), done.stderr


def test_grading_on_a_full_disk_is_one_line_and_exit_74(
    project: Path, tmp_path: Path, small_disk: Path
) -> None:
    _runs(project, tmp_path / "runs")
    runs = small_disk / "runs"
    shutil.copytree(tmp_path / "runs", runs, symlinks=True)
    before = {d: (d / GRADE_FILE).read_bytes() for d in find_runs(runs)}
    filler = _fill(small_disk)
    line = _said(assay("--project", project, "grade", runs, "--regrade"), runs)
    assert "rerun" in line
    assert {d: (d / GRADE_FILE).read_bytes() for d in find_runs(runs)} == before  # every grade whole
    assert not _staged(runs)
    filler.unlink()
    done = assay("--project", project, "grade", runs, "--regrade")
    assert done.returncode == 0, done.stderr
    assert all(g is not None and g.passed for g in map(read_grade, find_runs(runs)))


def test_any_command_that_meets_a_full_disk_says_so_in_one_line(
    project: Path, tmp_path: Path, small_disk: Path
) -> None:
    runs = small_disk / "runs"
    _runs(project, runs)
    filler = _fill(small_disk)
    _said(assay("view", runs, "--force"), runs)  # the pages: no wrapper of its own, the CLI's line
    filler.unlink()
    assert assay("view", runs, "--force").returncode == 0
