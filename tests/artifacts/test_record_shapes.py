"""Whatever shape a damaged record takes, its reader says it is damaged (a ValueError, or no grade)
and never fails as a bug, never blocks; a whole record of an older assay still reads."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from harness.artifacts import index
from harness.artifacts.index_rows import read_row
from harness.artifacts.names import GRADE_FILE, RUN_FILE
from harness.artifacts.records import Grade, RunRecord, RunStatus, read_grade, read_run
from harness.artifacts.run_tree import clear, find_runs
from harness.artifacts.store import read_record, write_record

RUN = RunRecord(
    job_id="m/none/none/off/a/s/t01",
    job_hash="h",
    matrix="m",
    scenario="s",
    cell="none/none/off",
    levels={},
    agent="a",
    trial=1,
    started_at=1.0,
    ended_at=2.0,
)
GRADE = Grade(status=RunStatus.GRADED, passed=True, usable=True, checks=(), grader_hash="g1-x", graded_at=3.0)


def _run_dir(tmp_path: Path) -> Path:
    run_dir = tmp_path / "runs" / "s" / "trial-01"
    run_dir.mkdir(parents=True)
    write_record(run_dir / RUN_FILE, RUN)
    write_record(run_dir / GRADE_FILE, GRADE)
    return run_dir


@pytest.mark.parametrize("text", ["[]", "null", "0", "true", '"x"', "[{}]"])
def test_a_record_that_is_not_a_json_object_is_damaged(tmp_path: Path, text: str) -> None:
    run_dir = _run_dir(tmp_path)
    (run_dir / RUN_FILE).write_text(text)
    (run_dir / GRADE_FILE).write_text(text)
    with pytest.raises(ValueError, match="not a record"):
        read_record(run_dir / RUN_FILE, RunRecord, 1)
    with pytest.raises(ValueError):
        read_run(run_dir)
    assert read_grade(run_dir) is None


def test_a_grade_without_its_verdict_is_no_grade_and_a_whole_old_one_reads(tmp_path: Path) -> None:
    run_dir = _run_dir(tmp_path)
    whole = json.loads((run_dir / GRADE_FILE).read_text())
    for missing in ("passed", "usable", "checks", "grader_hash", "graded_at"):
        (run_dir / GRADE_FILE).write_text(json.dumps({k: v for k, v in whole.items() if k != missing}))
        assert read_grade(run_dir) is None, missing
    (run_dir / GRADE_FILE).write_text(json.dumps({"schema_version": 1, "status": "graded"}))
    assert read_grade(run_dir) is None
    # a grade of an assay from before a section existed (agent_end) still reads, as do the bare fields
    (run_dir / GRADE_FILE).write_text(json.dumps({k: v for k, v in whole.items() if k != "agent_end"}))
    assert read_grade(run_dir) == GRADE
    bare = {"status", "passed", "usable", "checks", "grader_hash", "graded_at"}
    (run_dir / GRADE_FILE).write_text(json.dumps({k: v for k, v in whole.items() if k in bare}))
    assert read_grade(run_dir) == GRADE


def test_an_incomplete_record_is_a_read_error_of_its_index_row(tmp_path: Path) -> None:
    run_dir = _run_dir(tmp_path)
    (run_dir / GRADE_FILE).write_text(json.dumps({"schema_version": 1, "status": "graded"}))
    row = read_row(str(run_dir), "s/trial-01")
    assert row is not None and str(row.tree[-1]).startswith("grade.json: not a complete record (no passed")


def test_a_folder_named_run_json_is_an_unreadable_run_everywhere(tmp_path: Path) -> None:
    run_dir = _run_dir(tmp_path)
    (run_dir / RUN_FILE).unlink()
    (run_dir / RUN_FILE).mkdir()
    with pytest.raises(ValueError, match="not a file"):
        read_run(run_dir)
    assert find_runs(tmp_path / "runs") == [run_dir]
    row = read_row(str(run_dir), "s/trial-01")
    assert row is not None and str(row.tree[-1]).startswith("run.json: ")
    idx, stats = index.open_index(tmp_path / "runs")
    idx.close()
    assert stats is not None and stats.runs == 1
    (run_dir / GRADE_FILE).unlink()
    (run_dir / GRADE_FILE).mkdir()
    assert read_grade(run_dir) is None
    clear(run_dir)  # a rerun starts from nothing
    assert not run_dir.exists()


def test_a_fifo_named_run_json_never_blocks_a_reader(tmp_path: Path) -> None:
    run_dir = _run_dir(tmp_path)
    (run_dir / RUN_FILE).unlink()
    os.mkfifo(run_dir / RUN_FILE)
    found: list[BaseException] = []

    def read() -> None:
        try:
            read_run(run_dir)
        except BaseException as exc:
            found.append(exc)
        try:
            read_row(str(run_dir), "s/trial-01")
        except BaseException as exc:
            found.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout=10)
    assert not reader.is_alive(), "a reader blocked on a FIFO named run.json"
    assert len(found) == 1 and isinstance(found[0], ValueError), found
