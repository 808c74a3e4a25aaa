"""`assay report <run-tree>`: summary.json, report.md, report.html and JUnit XML from a run tree."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from harness.artifacts.store import FutureSchemaError
from harness.errors import NothingSelected, UsageError

if TYPE_CHECKING:
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
    from harness.artifacts.store import write_atomic
    from harness.report.render_md import render_markdown

    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for fmt in formats:
        path = out / FILES[fmt]
        if fmt == "json":
            report.write_json(path)
        elif fmt == "md":
            write_atomic(path, render_markdown(report.summary))
        elif fmt == "html":
            from harness.report.render_html import render_html

            write_atomic(path, render_html(report.summary, links_from=out, runs=report.runs))
        else:
            write_atomic(path, report.runs.junit_xml())
        written.append(path)
    return written


def execute(args: argparse.Namespace) -> int:
    from harness.report.aggregate import build_report
    from harness.report.runlist import Report
    from harness.report.summary import read_summary

    formats = parse_formats(args.format)
    tree: Path = args.tree
    try:
        if tree.is_file() and tree.suffix == ".json":
            report = Report.of(read_summary(tree))
            root = Path(report.summary.header.root)
        elif tree.is_dir():
            report = build_report(tree, regrade=args.regrade, project=Path(args.project), jobs=args.jobs)
            root = tree
        else:
            raise UsageError(f"{tree}: no such run tree")
    except FutureSchemaError as exc:
        raise UsageError(str(exc)) from exc
    summary = report.summary
    if summary.header.totals.runs == 0:
        raise NothingSelected(f"{tree}: no run directories (run.json) found")
    written = write_reports(report, args.out or root, formats)
    from harness.report.terminal import render_terminal

    print(render_terminal(summary))
    for path in written:
        print(f"  wrote {path}")
    sys.stdout.flush()
    return 0
