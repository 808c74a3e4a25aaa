"""`assay report <run-tree>`: summary.json, report.md, report.html and JUnit XML from a run tree."""

from __future__ import annotations

import argparse
import sys
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING

from harness.artifacts.store import FutureSchemaError
from harness.errors import NothingSelected, UsageError

if TYPE_CHECKING:
    from harness.artifacts.index_alongside import Alongside
    from harness.artifacts.store import Staged
    from harness.report.runlist import Report

HELP = "report rates, paired uplift and diagnostics over a run tree"
FORMATS = ("md", "json", "html", "junit")
FILES = {"md": "report.md", "json": "summary.json", "html": "report.html", "junit": "junit.xml"}


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "tree", type=Path, help="run tree (a folder of run directories, or a summary.json to re-render)"
    )
    parser.add_argument(
        "--regrade", action="store_true", help="grade every run again first (no agent tokens spent)"
    )
    parser.add_argument(
        "--format",
        default=",".join(FORMATS),
        help=f"comma-separated subset of {','.join(FORMATS)} (default: all)",
    )
    parser.add_argument("--out", type=Path, default=None, help="output folder (default: the run tree)")
    parser.add_argument(
        "--jobs",
        type=int,
        default=None,
        help="worker processes for reading the tree (default: 2 for large trees)",
    )


def parse_formats(value: str) -> tuple[str, ...]:
    """The requested formats, validated; unknown names list the valid ones."""
    names = tuple(dict.fromkeys(f.strip() for f in value.split(",") if f.strip()))
    unknown = [n for n in names if n not in FORMATS]
    if unknown or not names:
        raise UsageError(
            f"unknown report format {', '.join(unknown) or '(none)'}; valid: {', '.join(FORMATS)}"
        )
    return names


def write_reports(report: Report, out: Path, formats: tuple[str, ...]) -> list[Path]:
    """Render and write each requested format; returns the paths written."""
    staged = stage_reports(report, out, formats)
    try:
        return staged.commit()
    finally:
        staged.discard()


def stage_reports(report: Report, out: Path, formats: tuple[str, ...]) -> Staged:
    """Each requested format rendered into a file beside its target, not yet in place."""
    from harness.artifacts.store import Staged
    from harness.report.render_md import render_markdown

    staged = Staged()
    try:
        for fmt in formats:
            path = out / FILES[fmt]
            if fmt == "json":
                staged.write(path, chain(report.json_pieces(), "\n"))
            elif fmt == "md":
                staged.write(path, (render_markdown(report.summary),))
            elif fmt == "html":
                from harness.report.render_html import render_html

                staged.write(path, (render_html(report.summary, links_from=out, runs=report.runs),))
            else:
                staged.write(path, report.runs.junit_pieces())
    except BaseException:
        staged.discard()
        raise
    return staged


def execute(args: argparse.Namespace) -> int:
    from harness.artifacts.index_alongside import start_check

    formats = parse_formats(args.format)
    tree: Path = args.tree
    # The check of the tree's index against its run folders, started before the report's imports.
    check = start_check(tree) if tree.is_dir() and not args.regrade else None
    try:
        return _execute(args, formats, check)
    finally:
        if check is not None:
            check.stop()


def _execute(args: argparse.Namespace, formats: tuple[str, ...], check: Alongside | None) -> int:
    from harness.commands._generated import unwritable

    tree: Path = args.tree
    out = args.out or tree
    try:
        with unwritable(out, "no report file was replaced"):
            report, staged = _render(args, formats, check)
    except FutureSchemaError as exc:
        raise UsageError(str(exc)) from exc
    summary = report.summary
    if summary.header.totals.runs == 0:
        staged.discard()
        raise NothingSelected(f"{tree}: no run directories (run.json) found")
    try:
        with unwritable(out, "some report files may be the old ones; rerun"):
            written = staged.commit()
    finally:
        staged.discard()
    from harness.report.terminal import render_terminal

    print(render_terminal(summary))
    for path in written:
        print(f"  wrote {path}")
    sys.stdout.flush()
    return 0


def _render(
    args: argparse.Namespace, formats: tuple[str, ...], check: Alongside | None
) -> tuple[Report, Staged]:
    """The report of args.tree (a run tree, or a summary.json), rendered into staged files."""
    from harness.report.build import build_rendered
    from harness.report.runlist import Report
    from harness.report.summary import read_summary

    tree: Path = args.tree
    if tree.is_file() and tree.suffix == ".json":
        report = Report.of(read_summary(tree))
        root = Path(report.summary.header.root)
        return report, stage_reports(report, args.out or root, formats)
    if tree.is_dir() and args.regrade:
        from harness.report.build import build_report

        report = build_report(tree, regrade=True, project=Path(args.project), jobs=args.jobs)
        return report, stage_reports(report, args.out or tree, formats)
    if tree.is_dir():
        # Rendered while the tree is checked against its index, and again if it changed meanwhile.
        return build_rendered(
            tree,
            lambda r: stage_reports(r, args.out or tree, formats),
            project=Path(args.project),
            check=check,
        )
    raise UsageError(f"{tree}: no such run tree")
