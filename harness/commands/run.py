"""`assay run`: run one job (or a scenario in a cell) from generated/, or job files."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.commands._batch import add_options, select_and_run
from harness.errors import UsageError

HELP = "run trials of one job, or of a scenario x cell x agent, from generated/"
INTERRUPTED = "running trials were recorded as interrupted, rerun to resume"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("job", nargs="*", help="job id(s) <matrix>/<cell>/<agent>/<scenario>/tNN")
    parser.add_argument("--matrix", default=None, help="matrix id (with --scenario/--cell/--agent)")
    parser.add_argument("--job-file", action="append", default=[], type=Path, help="run a job JSON file")
    add_options(parser)


def execute(args: argparse.Namespace) -> int:
    if not (args.job_file or args.job or args.scenario or args.cell or args.agent or args.matrix):
        raise UsageError("give job id(s), --job-file, or a selection (--matrix/--scenario/--cell/--agent)")
    return select_and_run(args, matrix=args.matrix, job_ids=args.job)
