"""`assay run`: run one job (or a scenario in a cell) from generated/, or job files."""

from __future__ import annotations

import argparse
from pathlib import Path

from compiler.contract import Job
from harness import jobs
from harness.commands._batch import add_options, run_jobs
from harness.errors import UsageError

HELP = "run trials of one job, or of a scenario x cell x agent, from generated/"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("job", nargs="*", help="job id(s) <matrix>/<cell>/<agent>/<scenario>/tNN")
    parser.add_argument("--matrix", default=None, help="matrix id (with --scenario/--cell/--agent)")
    parser.add_argument("--job-file", action="append", default=[], type=Path, help="run a job JSON file")
    add_options(parser)


def execute(args: argparse.Namespace) -> int:
    project = Path(args.project).resolve()
    if not (args.job_file or args.job or args.scenario or args.cell or args.agent or args.matrix):
        raise UsageError("give job id(s), --job-file, or a selection (--matrix/--scenario/--cell/--agent)")
    if args.job_file:
        selected = jobs.from_files(args.job_file)
        if args.trials is not None:
            selected = [j for j in selected if j.trial <= args.trials]
    else:
        selected = jobs.select(
            project,
            matrix=args.matrix,
            job_ids=args.job,
            cells=args.cell,
            agents=args.agent,
            scenarios=args.scenario,
            trials=args.trials,
        )
    settings = jobs.matrix_settings(project, args.matrix or _only_matrix(selected))
    seed = args.seed if args.seed is not None else settings.seed
    return run_jobs(selected, args, seed=seed, parallel=settings.parallel, fail_fast=settings.fail_fast)


def _only_matrix(selected: list[Job]) -> str | None:
    names = {j.matrix for j in selected}
    return names.pop() if len(names) == 1 else None
