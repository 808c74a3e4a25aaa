"""The runs as the outputs list them (`harness.report.runlist`): rendered a block at a time and cached
with the block's aggregate, they write the same summary.json, junit.xml and report.html as a full
rebuild of the index and as a walk of the tree, byte for byte."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from report_tree import BIN, CONTROL, add_run, build_tree
from test_report_cached import blocks

from harness.artifacts.names import INDEX_FILE
from harness.report import build_summary, read_summary, write_summary
from harness.report.aggregate import summarize
from harness.report.build import build_report
from harness.report.collect import collect
from harness.report.runlist import RUN_LINKS_CAP, Report
from harness.report.summary import Summary

FILES = ("summary.json", "junit.xml", "report.html", "report.md")


def two_matrices(root: Path) -> None:
    """The fixture tree under m1/, and under m1/ and m2/ one cell with more runs than the page links:
    the cell spans two blocks."""
    build_tree(root / "m1")
    for matrix in ("m1", "m2"):
        for trial in range(20, 20 + RUN_LINKS_CAP - 10):
            add_run(root / matrix, scenario="wide", cell=CONTROL, trial=trial, passed=trial % 2 == 0)
            add_run(root / matrix, scenario="wide", cell=BIN, trial=trial, passed=trial % 3 != 0)


def written(report: Report, out: Path) -> dict[str, bytes]:
    from harness.commands.report import FORMATS, write_reports

    write_reports(report, out, FORMATS)
    return {name: (out / name).read_bytes() for name in FILES}


def test_summary_json_is_the_models_own_dump(tmp_path: Path) -> None:
    two_matrices(tmp_path)
    report = build_report(tmp_path)
    full = report.full()
    assert len(full.runs) == 40 + 4 * (RUN_LINKS_CAP - 10)
    assert [r.dir for r in full.runs] == sorted(r.dir for r in full.runs)
    assert report.json_text() == full.model_dump_json(indent=1)
    path = tmp_path / "summary.json"
    write_summary(path, full)
    assert Report.of(read_summary(path)).json_text() + "\n" == path.read_text()


def test_the_cached_path_a_rebuild_and_a_walk_write_the_same_files(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    two_matrices(root)
    first = written(build_report(root), tmp_path / "o1")  # builds the index, renders every block
    assert blocks(root) == {"m1/", "m2/"}
    cached = written(build_report(root), tmp_path / "o2")  # every block's runs from the cache
    (root / INDEX_FILE).unlink()
    rebuilt = written(build_report(root), tmp_path / "o3")  # the index rebuilt from the run folders
    walk = summarize(collect(root), root)  # no index, no blocks: every run sorted and rendered at once
    walked = written(Report.of(walk), tmp_path / "o4")
    for name in FILES:
        assert first[name] == cached[name] == rebuilt[name] == walked[name], name
    assert walk == build_summary(root)


def test_the_page_links_the_first_runs_of_a_cell_across_blocks(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    two_matrices(root)
    out = written(build_report(root), tmp_path / "out")
    page = out["report.html"].decode()
    found = re.search(r"<summary>30 run\(s\)</summary>(.*?)</details>", page)  # the control of `wide`
    assert found is not None
    cell = found.group(1)
    links = re.findall(r'<a href="\.\./tree/(m[12]/wide/scripted/none/none/off/trial-\d+)">t\d+</a>', cell)
    assert len(links) == RUN_LINKS_CAP
    expected = sorted(
        f"{m}/wide/scripted/none/none/off/trial-{t}" for m in ("m1", "m2") for t in range(20, 35)
    )
    assert links == expected[:RUN_LINKS_CAP]
    assert "… 5 more in summary.json" in cell
    junit = out["junit.xml"].decode()
    assert junit.count("<testcase ") == 40 + 4 * (RUN_LINKS_CAP - 10)


def test_a_regraded_block_is_rendered_again(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    two_matrices(root)
    build_report(root)
    shutil.rmtree(root / "m2/wide/scripted/bin/none/off/trial-20")
    again = build_report(root)
    full: Summary = again.full()
    assert "m2/wide/scripted/bin/none/off/trial-20" not in {r.dir for r in full.runs}
    assert full == summarize(collect(root), root)
    assert again.runs.counts[(None, "wide", "scripted", BIN)] == 2 * (RUN_LINKS_CAP - 10) - 1
