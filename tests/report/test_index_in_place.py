"""The results index against records changed without a rename: edited in place, truncated, garbled,
replaced under restored mtimes, a listing changed behind a folder mtime set back. None of them moves
the run folder's mtime; each moves a record's ctime or inode, which the index's stat of a run holds
(`harness.artifacts.index_scan.stat_of`). So a sync reads that run again, and that run alone: the
report and `assay results` never serve what is no longer on disk."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from report_tree import build_tree

from harness.artifacts import index
from harness.artifacts.index_scan import stat_of
from harness.report import build_summary
from harness.report.aggregate import Aggregator
from harness.report.collect import collect
from harness.report.results import results
from harness.report.summary import Summary

RUN = "s1/scripted/bin/none/off/trial-01"
"""A run of build_tree that passed (usable too): its grade.json says `"passed": true`."""


def walked(root: Path) -> Summary:
    """The summary the old way: every run directory read, no index."""
    agg = Aggregator()
    for run in collect(root):
        agg.add(run)
    return agg.summary(root)


def behind_mtimes(path: Path, change: str, old: bytes, new: bytes) -> None:
    """Change a record without a trace in any mtime: in place through the same inode ('r+'), or by a
    new file renamed over it; then the record's and its folder's mtimes set back as they were."""
    folder = path.parent
    before = path.stat(), folder.stat()
    text = path.read_bytes()
    assert text.count(old) == 1 and len(old) == len(new)  # the same size, too
    if change == "in place":
        with open(path, "r+b") as fh:
            fh.seek(text.index(old))
            fh.write(new)
    else:
        staged = folder / ".staged"
        staged.write_bytes(text.replace(old, new))
        staged.replace(path)
    _set_back(path, before[0])
    _set_back(folder, before[1])
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (before[0].st_size, before[0].st_mtime_ns)


def _set_back(path: Path, st: os.stat_result) -> None:
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_mtime_ns == st.st_mtime_ns


def read_again(root: Path) -> int:
    """How many runs a sync of root reads again now."""
    idx, synced = index.open_index(root)
    idx.close()
    assert synced is not None
    return synced.read


@pytest.mark.parametrize("change", ["in place", "renamed over"])
def test_a_verdict_changed_behind_the_mtimes_is_not_served_stale(tmp_path: Path, change: str) -> None:
    build_tree(tmp_path)
    before = build_summary(tmp_path)  # index built, facts and blocks cached
    assert bool(results(tmp_path).set_index("dir").loc[RUN, "passed"]) is True
    behind_mtimes(tmp_path / RUN / "grade.json", change, b'"passed": true', b'"passed":false')
    after = build_summary(tmp_path)
    assert after == walked(tmp_path) and after != before
    assert bool(results(tmp_path).set_index("dir").loc[RUN, "passed"]) is False


def test_a_run_json_rewritten_in_place_with_other_facts(tmp_path: Path) -> None:
    build_tree(tmp_path)
    before = build_summary(tmp_path)
    behind_mtimes(tmp_path / RUN / "run.json", "in place", b'"agent": "scripted"', b'"agent": "replayed"')
    after = build_summary(tmp_path)
    assert after == walked(tmp_path) and after != before
    assert "replayed" in {g.agent for g in after.groups}
    assert results(tmp_path).set_index("dir").loc[RUN, "agent"] == "replayed"


@pytest.mark.parametrize("damage", ["truncated to nothing", "garbled"])
@pytest.mark.parametrize("record", ["run.json", "grade.json"])
def test_a_record_damaged_in_place_is_counted_not_kept(tmp_path: Path, record: str, damage: str) -> None:
    build_tree(tmp_path)
    before = build_summary(tmp_path).header.totals
    path = tmp_path / RUN / record
    st, folder = path.stat(), path.parent.stat()
    with open(path, "r+b") as fh:
        if damage == "garbled":
            fh.write(b"\x00" * 16)  # a bad sector's worth, the size kept
        else:
            fh.truncate(0)
    _set_back(path, st)
    _set_back(path.parent, folder)
    row = results(tmp_path).set_index("dir").loc[RUN]  # results grades nothing: the damage as it is
    assert str(row["read_error"]).startswith(f"{record}:")
    assert row.isna()["agent" if record == "run.json" else "passed"]  # the stale value is gone
    # The report counts it as the walk does: run.json unreadable; grade.json ungradeable (graded
    # again first when the grader is installed, as a damaged grade is: here it cannot grade it).
    s = build_summary(tmp_path)
    after = s.header.totals
    assert after == walked(tmp_path).header.totals  # (the reason's wording is the index reader's own)
    assert after.graded == before.graded - 1
    if record == "run.json":
        assert after.unreadable == before.unreadable + 1
        (evidence,) = [d.evidence for d in s.diagnostics if d.kind == "unreadable"]
        assert evidence[0].startswith(f"{RUN}: run.json:")
    else:
        assert after.ungradeable == before.ungradeable + 1


def test_a_listing_changed_behind_a_folder_mtime_set_back(tmp_path: Path) -> None:
    """A file that came into a run folder whose mtime was then set back: its ctime moved on."""
    build_tree(tmp_path)
    build_summary(tmp_path)
    folder = tmp_path / RUN
    st = folder.stat()
    (folder / "view.html").write_text("<p>page</p>", encoding="utf-8")
    _set_back(folder, st)
    assert build_summary(tmp_path) == walked(tmp_path)


def test_an_unchanged_tree_is_stat_ed_not_read_and_a_change_reads_that_run_alone(tmp_path: Path) -> None:
    build_tree(tmp_path)
    build_summary(tmp_path)
    assert read_again(tmp_path) == 0
    behind_mtimes(tmp_path / RUN / "grade.json", "in place", b'"passed": true', b'"passed":false')
    assert read_again(tmp_path) == 1
    assert read_again(tmp_path) == 0  # its row now holds the record as it is


def test_a_page_after_an_edit_in_place_writes_the_whole_row(tmp_path: Path) -> None:
    """A page (view.html) records only the folder's listing while the records are as the row holds
    them; a record edited in place since, mtimes set back, makes it write the whole row."""
    build_tree(tmp_path)
    build_summary(tmp_path)
    run = tmp_path / RUN
    behind_mtimes(run / "grade.json", "in place", b'"passed": true', b'"passed":false')
    (run / "view.html").write_text("<p>page</p>", encoding="utf-8")
    assert index.record_listing(run) == 1
    with index.open_index(tmp_path)[0] as idx:
        assert idx.known()[RUN] == stat_of(str(run))
    assert bool(results(tmp_path).set_index("dir").loc[RUN, "passed"]) is False
