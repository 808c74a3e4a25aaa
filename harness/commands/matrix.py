"""`assay matrix`: run a whole matrix from generated/ (finished trials are skipped)."""

from __future__ import annotations

import argparse
from pathlib import Path

from compiler.contract import Job
from harness import jobs
from harness.commands._batch import add_options, run_jobs

HELP = "run every trial of a matrix (resumable: finished trials are skipped)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("matrix", nargs="?", default=None, help="matrix id (default: every matrix)")
    parser.add_argument(
        "--job-file", action="append", default=[], type=Path, help="run job JSON files instead"
    )
    add_options(parser)


def execute(args: argparse.Namespace) -> int:
    project = Path(args.project).resolve()
    if args.job_file:
        selected = jobs.from_files(args.job_file)
        if args.trials is not None:
            selected = [j for j in selected if j.trial <= args.trials]
    else:
        selected = jobs.select(
            project,
            matrix=args.matrix,
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
