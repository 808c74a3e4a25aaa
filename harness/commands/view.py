"""`assay view <run-dir|tree>`: write each run's page (view.html in its run directory).

The grader's callers (`assay matrix`, `assay run`, `assay grade`) write the page of every run they
grade; this command writes the pages a tree lacks (or every one with --force), e.g. for runs graded
by an earlier assay. Exit codes: 0 ok, 2 usage error, 3 no run found.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HELP = "write each run's page (view.html: prompt, transcript, trace, snapshots, diff, checks)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", type=Path, help="a run directory or a tree of them")
    parser.add_argument("--force", action="store_true", help="rewrite pages that are up to date too")


def execute(args: argparse.Namespace) -> int:
    from harness.artifacts.run_tree import find_runs
    from harness.errors import NothingSelected, UsageError
    from harness.report.viewer import refresh_page

    if not args.target.exists():
        raise UsageError(f"{args.target} does not exist")
    runs = find_runs(args.target)
    if not runs:
        raise NothingSelected(f"no run (a folder with run.json) under {args.target}")
    written = sum(1 for run_dir in runs if refresh_page(run_dir, force=args.force))
    print(f"{len(runs)} run(s): {written} page(s) written, {len(runs) - written} up to date", file=sys.stderr)
    if len(runs) == 1:
        print(runs[0] / "view.html")
    return 0
