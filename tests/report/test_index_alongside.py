"""The report reads the results index while a process of its own checks every run folder against it
(`harness.artifacts.index_alongside`): what it read is kept only when the check found the tree as the
rows say and no row was written meanwhile; else the index is synced and the report made again."""

from __future__ import annotations

import subprocess
from pathlib import Path

from report_tree import CONTROL, add_run, build_tree
from test_report_cached import flip, walked

from harness.artifacts import index
from harness.artifacts.index_scan import differing
from harness.artifacts.names import INDEX_FILE
from harness.artifacts.store import Staged
from harness.report import build_summary
from harness.report.build import build_rendered
from harness.report.indexed import opened
from harness.report.results import results
from harness.report.runlist import Report

RUN = "s2/scripted/bin/none/off/trial-01"


def check(root: Path) -> int:
    return differing(str(root / INDEX_FILE), str(root.resolve()), "")


def test_a_grade_rewritten_behind_the_index_is_seen_by_the_next_report(tmp_path: Path) -> None:
    build_tree(tmp_path)
    before = build_summary(tmp_path)  # builds the index, caches every block
    flip(tmp_path / RUN)  # no sync, no grader: only the folder's mtime tells
    after = build_summary(tmp_path)
    assert after != before and after == walked(tmp_path)
    passed = results(tmp_path).set_index("dir").loc[RUN, "passed"]
    assert passed == next(r.passed for r in after.runs if r.dir == RUN)


def test_the_check_counts_changed_new_and_gone_run_folders(tmp_path: Path) -> None:
    tmp_path = tmp_path / "a tree?#50%"  # a path the check must quote to open the index
    build_tree(tmp_path)
    build_summary(tmp_path)
    assert check(tmp_path) == 0
    flip(tmp_path / RUN)
    assert check(tmp_path) == 1
    add_run(tmp_path, scenario="s9", cell=CONTROL, trial=1)
    assert check(tmp_path) == 2
    subprocess.run(["rm", "-rf", str(tmp_path / "s1/scripted/bin/none/off/trial-02")], check=True)
    assert check(tmp_path) == 3
    build_summary(tmp_path)  # synced again
    assert check(tmp_path) == 0
    assert differing(str(tmp_path / INDEX_FILE), str((tmp_path / "s1").resolve()), "s1/") == 0


def test_a_listing_is_current_only_while_nothing_changed(tmp_path: Path) -> None:
    build_tree(tmp_path)
    build_summary(tmp_path)
    with opened(tmp_path, alongside=True) as listing:
        assert listing.alongside is not None
        while not listing.alongside.finished():  # the answer is read once the check is seen over
            continue
        assert not listing.stale() and listing.current() and listing.alongside.wait() == 0
    flip(tmp_path / RUN)
    with opened(tmp_path, alongside=True) as listing:
        assert not listing.current()  # the check found the folder changed
        assert listing.stale() and listing.alongside is not None and listing.alongside.wait() == 1
    build_summary(tmp_path)
    with opened(tmp_path, alongside=True) as listing:
        run = tmp_path / "s1/scripted/bin/none/off/trial-01"
        flip(run)
        index.record(run)  # a grader writes its row while the report reads: the check may miss it
        assert not listing.current()


class Recorded:
    """A rendering that remembers whether it was thrown away."""

    def __init__(self, report: Report) -> None:
        self.summary = report.full()
        self.discarded = False

    def discard(self) -> None:
        self.discarded = True


def test_a_report_made_over_a_changed_tree_is_made_again(tmp_path: Path) -> None:
    build_tree(tmp_path)
    build_summary(tmp_path)
    made: list[Recorded] = []

    def render(report: Report) -> Recorded:
        made.append(Recorded(report))
        return made[-1]

    report, out = build_rendered(tmp_path, render)
    assert made == [out] and not out.discarded  # an unchanged tree: rendered once
    flip(tmp_path / RUN)
    made.clear()
    report, out = build_rendered(tmp_path, render)
    # Rendered once more from the synced index; the first rendering, unless the check had already
    # answered before it began, thrown away.
    assert out is made[-1] and not out.discarded and all(m.discarded for m in made[:-1])
    assert len(made) in (1, 2) and out.summary == report.full() == walked(tmp_path)
    assert all(m.summary != out.summary for m in made[:-1])


def test_a_grader_writing_during_the_rendering_makes_it_again(tmp_path: Path) -> None:
    build_tree(tmp_path)
    build_summary(tmp_path)
    run = tmp_path / "s3/scripted/none/none/off/trial-02"
    made: list[Recorded] = []

    def render(report: Report) -> Recorded:
        if not made:
            flip(run)
            index.record(run)
        made.append(Recorded(report))
        return made[-1]

    report, _out = build_rendered(tmp_path, render)
    assert len(made) == 2 and made[0].discarded
    assert report.full() == walked(tmp_path)


def test_facts_are_not_cached_over_a_row_written_since(tmp_path: Path) -> None:
    build_tree(tmp_path)
    build_summary(tmp_path)
    idx, _stats = index.open_index(tmp_path)
    with idx:
        seen = idx.generation()
        run = tmp_path / RUN
        flip(run)
        index.record(run)
        assert not idx.put_facts([(RUN, b"stale")], seen)
        assert idx.put_facts([(RUN, b"fresh")], idx.generation())


def test_staged_files_are_put_in_place_together_or_not_at_all(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("old a")
    staged = Staged()
    staged.write(tmp_path / "a.txt", ["new ", "a"])
    staged.write(tmp_path / "b.txt", iter(["b"]))
    assert (tmp_path / "a.txt").read_text() == "old a" and not (tmp_path / "b.txt").exists()
    assert staged.commit() == [tmp_path / "a.txt", tmp_path / "b.txt"]
    assert (tmp_path / "a.txt").read_text() == "new a" and (tmp_path / "b.txt").read_text() == "b"
    staged.write(tmp_path / "a.txt", ["newer"])
    staged.discard()
    assert (tmp_path / "a.txt").read_text() == "new a"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "b.txt"]  # nothing left behind
