"""`assay results <tree>`: every run of a tree with every grade field, from the results index.

Prints the table (or writes it: `--out runs.csv|.json|.parquet`). Needs pandas, the `results` extra.
Exit codes: 0 ok, 2 usage error (no tree, no pandas), 3 no run under the tree.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HELP = "every run of a tree with every grade field, as a table (pandas; the `results` extra)"
DEFAULT_COLUMNS = ("dir", "status", "passed", "usable", "usage_total", "usage_cost_usd")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("tree", type=Path, help="run tree (a folder of run directories)")
    parser.add_argument(
        "--out", type=Path, default=None, help="write the whole table to .csv, .json or .parquet"
    )
    parser.add_argument(
        "--columns",
        default=",".join(DEFAULT_COLUMNS),
        help=f"columns printed (comma-separated; default {','.join(DEFAULT_COLUMNS)}; 'all' for every one)",
    )


def execute(args: argparse.Namespace) -> int:
    from harness.errors import NothingSelected, UsageError
    from harness.report.results import results

    frame = results(args.tree)
    if frame.empty:
        raise NothingSelected(f"{args.tree}: no run directories (run.json) found")
    if args.out is not None:
        writers = {".csv": frame.to_csv, ".json": frame.to_json, ".parquet": frame.to_parquet}
        write = writers.get(args.out.suffix)
        if write is None:
            raise UsageError(f"--out {args.out}: use a .csv, .json or .parquet file name")
        if args.out.suffix == ".json":
            frame.to_json(args.out, orient="records", indent=1)
        else:
            write(args.out, index=False) if args.out.suffix == ".csv" else write(args.out)
        print(f"{len(frame)} run(s), {len(frame.columns)} columns: wrote {args.out}")
        return 0
    wanted = list(frame.columns) if args.columns == "all" else [c.strip() for c in args.columns.split(",")]
    unknown = [c for c in wanted if c not in frame.columns]
    if unknown:
        raise UsageError(f"unknown column(s) {', '.join(unknown)}; `--columns all` lists every one")
    sys.stdout.write(frame[wanted].to_string(index=False, max_rows=200) + "\n")
    print(f"{len(frame)} run(s), {len(frame.columns)} columns", file=sys.stderr)
    return 0
