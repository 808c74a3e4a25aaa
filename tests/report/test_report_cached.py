"""The report's cached block aggregates (`harness.report.cached`): a report over an unchanged tree
merges one cached aggregate per block and equals the walk; a run changed behind the index's back, one
the grader records, a damaged or forged entry, or a write while a report caches, never leaves a
stale block in use."""

from __future__ import annotations

import marshal
import sqlite3
from pathlib import Path

from report_tree import CONTROL, add_run, build_tree

from harness.artifacts import index
from harness.artifacts.names import INDEX_FILE
from harness.artifacts.records import read_grade
from harness.artifacts.store import write_record
from harness.report import build_summary, cached
from harness.report.aggregate import Aggregator
from harness.report.collect import collect


def walked(root: Path) -> object:
    """The summary the old way: every run directory read, no index."""
    agg = Aggregator()
    for run in collect(root):
        agg.add(run)
    return agg.summary(root)


def blocks(root: Path) -> set[str]:
    with sqlite3.connect(root / INDEX_FILE) as con:
        return {row[0] for row in con.execute("SELECT block FROM aggregates")}


def flip(run: Path) -> None:
    """Regrade run elsewhere: its grade.json rewritten (atomically) with the verdict flipped."""
    grade = read_grade(run)
    assert grade is not None
    write_record(run / "grade.json", grade.model_copy(update={"passed": not grade.passed}))


def test_cached_blocks_equal_the_walk(tmp_path: Path) -> None:
    build_tree(tmp_path)
    first = build_summary(tmp_path)
    assert blocks(tmp_path) == {"s1/", "s2/", "s3/"}
    again = build_summary(tmp_path)  # every block from its cached aggregate
    assert first == again == walked(tmp_path)


def test_a_run_regraded_behind_the_index_drops_its_block(tmp_path: Path) -> None:
    build_tree(tmp_path)
    before = build_summary(tmp_path)
    flip(tmp_path / "s2/scripted/bin/none/off/trial-01")
    idx, _stats = index.open_index(tmp_path)  # the sync sees the folder change
    idx.close()
    assert blocks(tmp_path) == {"s1/", "s3/"}
    after = build_summary(tmp_path)
    assert after == walked(tmp_path) and after != before
    assert blocks(tmp_path) == {"s1/", "s2/", "s3/"}


def test_the_graders_record_drops_the_block_and_new_runs_are_counted(tmp_path: Path) -> None:
    build_tree(tmp_path)
    build_summary(tmp_path)
    run = tmp_path / "s3/scripted/bin/none/off/trial-02"
    flip(run)
    assert index.record(run) == 1
    assert blocks(tmp_path) == {"s1/", "s2/"}
    add_run(tmp_path, scenario="s1", cell=CONTROL, trial=9)
    assert build_summary(tmp_path) == walked(tmp_path)


def test_a_damaged_or_forged_entry_is_aggregated_again(tmp_path: Path) -> None:
    build_tree(tmp_path)
    build_summary(tmp_path)
    forged = marshal.dumps((..., "object", "Path", {}))  # a class the report does not name
    with sqlite3.connect(tmp_path / INDEX_FILE) as con:
        con.execute("UPDATE aggregates SET state = ? WHERE block = 's1/'", (b"\x00garbage",))
        con.execute("UPDATE aggregates SET state = ? WHERE block = 's2/'", (forged,))
        con.execute("UPDATE aggregates SET state = ? WHERE block = 's3/'", (marshal.dumps({"a": 1}),))
    assert build_summary(tmp_path) == walked(tmp_path)


def test_no_aggregate_is_cached_over_a_write_it_may_predate(tmp_path: Path) -> None:
    build_tree(tmp_path)
    build_summary(tmp_path)
    idx, _stats = index.open_index(tmp_path)
    with idx:
        seen = idx.generation()
        run = tmp_path / "s1/scripted/bin/none/off/trial-01"
        flip(run)
        index.record(run)  # a grader writes while the report aggregates
        assert not idx.put_aggregate("s1/", b"stale", seen)
        assert idx.put_aggregate("s1/", b"fresh", idx.generation())


def test_a_changed_aggregation_code_drops_every_entry(tmp_path: Path) -> None:
    build_tree(tmp_path)
    build_summary(tmp_path)
    with sqlite3.connect(tmp_path / INDEX_FILE) as con:
        con.execute("UPDATE meta SET value = 'other' WHERE key = 'aggregates_version'")
        # a well-formed entry the current code would not have written: only the version catches it
        con.execute("UPDATE aggregates SET state = ?", (cached.dumps(Aggregator()),))
    assert build_summary(tmp_path) == walked(tmp_path)
    with sqlite3.connect(tmp_path / INDEX_FILE) as con:
        assert con.execute("SELECT value FROM meta WHERE key = 'aggregates_version'").fetchone()[0] != "other"
