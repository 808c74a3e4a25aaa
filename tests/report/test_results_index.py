"""The results index: the report and `assay results` read it instead of walking the tree, and it
follows every change of the tree (new, removed, regraded runs), rebuilds itself when it is missing,
corrupt or of another layout, and survives concurrent writers."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from report_tree import BIN, CONTROL, a_grade, add_run, build_tree

from harness.artifacts import index
from harness.artifacts.index_rows import GRADE_COLUMNS, RUN_COLUMNS
from harness.artifacts.index_scan import stat_of
from harness.artifacts.names import INDEX_FILE
from harness.artifacts.records import RunStatus, read_grade
from harness.artifacts.store import write_record
from harness.report import build_summary
from harness.report.aggregate import Aggregator
from harness.report.collect import collect
from harness.report.results import results
from tests.helpers import assay

REPO = Path(__file__).resolve().parents[2]


def walked(root: Path) -> object:
    """The summary the old way: every run directory read, no index."""
    agg = Aggregator()
    for run in collect(root):
        agg.add(run)
    return agg.summary(root)


def test_the_report_through_the_index_equals_the_walk(tmp_path: Path) -> None:
    build_tree(tmp_path)
    first = build_summary(tmp_path)  # builds the index and caches each run's facts
    assert (tmp_path / INDEX_FILE).is_file()
    again = build_summary(tmp_path)  # from the cached facts alone
    assert first == again == walked(tmp_path)


def test_results_has_every_grade_field(tmp_path: Path) -> None:
    build_tree(tmp_path)
    frame = results(tmp_path)
    runs = sorted(str(p.parent.relative_to(tmp_path)) for p in tmp_path.rglob("run.json"))
    assert sorted(frame["dir"]) == runs
    for column in (
        "status",
        "passed",
        "usable",
        "grader_hash",
        "usage_total",
        "tool_use_invocations",
        "friction_usage_errors",
        "snapshots_first_valid",
        "checks",
        "scenario",
        "agent",
        "cell",
        "trial",
        "run_exit_code",
        "run_metrics_input_tokens",
        "family",
        "split",
    ):
        assert column in frame.columns, column
    # Every field of both records, however nested (a section's fields flattened as <section>_<field>).
    assert {c.name for c in (*GRADE_COLUMNS, *RUN_COLUMNS)} <= set(frame.columns)
    row = frame.set_index("dir").loc["s1/scripted/bin/none/off/trial-01"]
    grade = read_grade(tmp_path / "s1/scripted/bin/none/off/trial-01")
    assert grade is not None
    assert (row["passed"], row["tool_use_invocations"], row["grader_hash"]) == (
        grade.passed,
        grade.tool_use.invocations,
        grade.grader_hash,
    )
    graded = frame[frame["status"] == "graded"]
    assert graded["passed"].dtype == "boolean" and len(graded) > 0
    check_columns = [c for c in frame.columns if c.startswith("check_")]
    assert check_columns and set(frame[check_columns[0]].dropna()) <= {"pass", "fail", "error", "unavailable"}


def test_the_index_follows_the_tree(tmp_path: Path) -> None:
    build_tree(tmp_path)
    before = results(tmp_path).set_index("dir")
    run = tmp_path / "s1/scripted/bin/none/off/trial-01"
    grade = read_grade(run)
    assert grade is not None
    write_record(
        run / "grade.json", grade.model_copy(update={"passed": not grade.passed})
    )  # a regrade elsewhere
    added = add_run(tmp_path, scenario="s9", cell=CONTROL, trial=1)
    removed = tmp_path / "s1/scripted/bin/none/off/trial-02"
    subprocess.run(["rm", "-rf", str(removed)], check=True)
    after = results(tmp_path).set_index("dir")
    rel = str(run.relative_to(tmp_path))
    assert after.loc[rel, "passed"] == (not before.loc[rel, "passed"])
    assert str(added.relative_to(tmp_path)) in after.index
    assert str(removed.relative_to(tmp_path)) not in after.index
    assert len(after) == len(before)
    s = build_summary(tmp_path)
    assert s == walked(tmp_path)


def test_a_subtree_reads_the_index_above_it(tmp_path: Path) -> None:
    build_tree(tmp_path)
    build_summary(tmp_path)
    sub = tmp_path / "s1"
    assert index.locate(sub) == (tmp_path.resolve() / INDEX_FILE, "s1/")
    assert build_summary(sub) == walked(sub)
    assert not (sub / INDEX_FILE).exists()


@pytest.mark.parametrize("damage", ["garbage", "layout", "truncated"])
def test_a_damaged_index_is_rebuilt(tmp_path: Path, damage: str) -> None:
    build_tree(tmp_path)
    good = build_summary(tmp_path)
    path = tmp_path / INDEX_FILE
    if damage == "garbage":
        for suffix in ("-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        path.write_bytes(b"not a database at all" * 100)
    elif damage == "layout":
        con = sqlite3.connect(path)
        con.execute("UPDATE meta SET value = 'another' WHERE key = 'layout'")
        con.commit()
        con.close()
    else:
        con = sqlite3.connect(path)
        con.execute("DELETE FROM tree")  # rows lost: the runs come back from the tree
        con.commit()
        con.close()
    stats: list[index.SyncStats] = []
    idx, synced = index.open_index(tmp_path)
    idx.close()
    assert synced is not None and synced.read == synced.runs > 0
    assert (synced.rebuilt is not None) == (damage != "truncated")
    assert build_summary(tmp_path) == good
    del stats


def test_the_grader_writes_its_grade_into_the_index(tmp_path: Path) -> None:
    build_tree(tmp_path)
    build_summary(tmp_path)
    run = tmp_path / "s1/scripted/bin/none/off/trial-01"
    write_record(run / "grade.json", a_grade(RunStatus.UNGRADEABLE, error="regraded elsewhere"))
    assert index.record(run) == 1
    idx = index.Index(tmp_path / INDEX_FILE, tmp_path, "")
    with idx:
        known = idx.known()
        rows = {r[0]: r[1:] for r in idx.rows("runs", ("status", "error"))}
    assert known[str(run.relative_to(tmp_path))] == stat_of(str(run))  # current: no reread needed
    assert rows[str(run.relative_to(tmp_path))] == ("ungradeable", "regraded elsewhere")


def test_a_page_updates_the_listing_and_a_changed_record_the_whole_row(tmp_path: Path) -> None:
    build_tree(tmp_path)
    build_summary(tmp_path)
    run = tmp_path / "s1/scripted/bin/none/off/trial-01"
    rel = str(run.relative_to(tmp_path))

    def row() -> tuple[int, list[str], str]:
        with index.Index(tmp_path / INDEX_FILE, tmp_path, "") as idx:
            ((mtime, files),) = idx.con.execute("SELECT dir_ctime_ns, files FROM tree WHERE dir = ?", (rel,))
            ((error,),) = idx.con.execute("SELECT error FROM runs WHERE dir = ?", (rel,))
        return mtime, json.loads(files), error

    (run / "view.html").write_text("<p>page</p>", encoding="utf-8")  # records unchanged: the listing alone
    assert index.record_listing(run) == 1
    mtime, files, error = row()
    assert mtime == run.stat().st_mtime_ns and "view.html" in files
    idx, synced = index.open_index(tmp_path)
    idx.close()
    assert synced is not None and synced.read == 0  # current: nothing read again

    # a regrade the index never heard of, then a page: the row is written whole, not only its listing
    write_record(run / "grade.json", a_grade(RunStatus.UNGRADEABLE, error="regraded unseen"))
    (run / "view.html").unlink()
    assert index.record_listing(run) == 1
    mtime, files, error = row()
    assert error == "regraded unseen" and "view.html" not in files and mtime == run.stat().st_mtime_ns


WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from harness.artifacts import index
    from harness.artifacts.records import Grade, RunStatus
    from harness.artifacts.store import write_record
    for n in range(int(sys.argv[2])):
        for run in sys.argv[3:]:
            grade = Grade(
                status=RunStatus.GRADED, passed=n % 2 == 0, usable=False, checks=(), grader_hash=sys.argv[1], graded_at=0.0
            )
            write_record(Path(run) / "grade.json", grade)
            assert index.record(Path(run)) == 1
    """
)


def test_concurrent_graders_do_not_corrupt_it(tmp_path: Path) -> None:
    runs = [add_run(tmp_path, scenario=f"s{i}", cell=BIN, trial=1) for i in range(12)]
    index.ensure(tmp_path)
    halves = [runs[::2], runs[1::2]]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, f"w{i}", "15", *map(str, half)],
            cwd=REPO,
            env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
            stderr=subprocess.PIPE,
            text=True,
        )
        for i, half in enumerate(halves)
    ]
    for _ in range(5):  # a reader syncing meanwhile
        idx, _stats = index.open_index(tmp_path)
        idx.close()
    for p in procs:
        _out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    con = sqlite3.connect(tmp_path / INDEX_FILE)
    assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    con.close()
    frame = results(tmp_path).set_index("dir")
    for i, half in enumerate(halves):
        for run in half:
            assert frame.loc[str(run.relative_to(tmp_path)), "grader_hash"] == f"w{i}"
            assert bool(frame.loc[str(run.relative_to(tmp_path)), "passed"]) is True  # the last write (n=14)


def test_assay_results_prints_and_writes(tmp_path: Path) -> None:
    build_tree(tmp_path)
    shown = assay("results", tmp_path, "--columns", "dir,status,passed")
    assert shown.returncode == 0, shown.stderr
    assert "s1/scripted/bin/none/off/trial-01" in shown.stdout and "graded" in shown.stdout
    out = tmp_path / "runs.json"
    written = assay("results", tmp_path, "--out", out)
    assert written.returncode == 0, written.stderr
    rows = json.loads(out.read_text())
    assert len(rows) == len(list(tmp_path.rglob("run.json"))) and "usage_total" in rows[0]
    bad = assay("results", tmp_path, "--columns", "nope")
    assert bad.returncode == 2 and "unknown column(s) nope" in bad.stderr


def test_a_run_folder_that_becomes_a_tree_and_a_single_run(tmp_path: Path) -> None:
    run = add_run(tmp_path, scenario="s", cell=CONTROL, trial=1)
    build_summary(tmp_path)
    (run / "run.json").unlink()  # no run there any more, but runs below it now
    (run / "grade.json").unlink()
    nested = add_run(run, scenario="t", cell=BIN, trial=1)
    assert list(results(tmp_path)["dir"]) == [str(nested.relative_to(tmp_path))]
    single = build_summary(nested)  # a run directory alone: read in memory, the index above untouched
    assert single.header.totals.runs == 1 and single == walked(nested)
    assert list(results(tmp_path)["dir"]) == [str(nested.relative_to(tmp_path))]
