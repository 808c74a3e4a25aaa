"""`assay explain <job-id>`: every resolved field of a job and the file:line it came from."""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = "print every resolved field of a job and the file:line:col it came from"


def configure(parser: argparse.ArgumentParser) -> None:
    """Arguments of `assay explain`."""
    parser.add_argument("job", help="job id <matrix>/<cell>/<agent>/<scenario>/tNN")
    parser.add_argument("--full", action="store_true", help="do not shorten long values")


def execute(args: argparse.Namespace) -> int:
    """Compile in memory and explain one job."""
    from compiler.explain import explain
    from compiler.pipeline import build
    from harness.errors import UsageError

    plan = build(Path(args.project))
    try:
        lines = explain(plan, args.job, width=0 if args.full else 100)
    except (KeyError, ValueError) as exc:
        raise UsageError(str(exc).strip("'\"")) from None
    wide = max(len(line.path) for line in lines)
    for line in lines:
        print(f"{line.path.ljust(wide)}  {line.value}  <- {line.source}")
    return 0
