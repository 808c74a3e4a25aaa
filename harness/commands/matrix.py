"""`assay matrix`: run a whole matrix from generated/ (finished trials are skipped)."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.commands._batch import add_options, select_and_run

HELP = "run every trial of a matrix (resumable: finished trials are skipped)"
INTERRUPTED = "running trials were recorded as interrupted, rerun to resume"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("matrix", nargs="?", default=None, help="matrix id (default: every matrix)")
    parser.add_argument(
        "--job-file", action="append", default=[], type=Path, help="run job JSON files instead"
    )
    add_options(parser)


def execute(args: argparse.Namespace) -> int:
    return select_and_run(args, matrix=args.matrix)
