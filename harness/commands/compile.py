"""`assay compile`: specs/ + scenarios/ -> generated/ (every spec error at once, exit 2)."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

HELP = "compile specs/ and scenarios/ into generated/ (manifest and job files)"


def configure(parser: argparse.ArgumentParser) -> None:
    """Arguments of `assay compile`."""
    parser.add_argument(
        "--format", choices=("text", "json", "github"), default="text", help="how to print spec errors"
    )
    parser.add_argument("--force", action="store_true", help="recompile even when no input changed")
    parser.add_argument("--out", default=None, help="output folder (default: <project>/generated)")
    parser.add_argument("--check", action="store_true", help="validate and expand only; write nothing")


def execute(args: argparse.Namespace) -> int:
    """Compile; invalid specs raise SpecErrors (printed in --format by cli.main, exit 2)."""
    from compiler.pipeline import build, compile_project

    args.spec_format = args.format
    root = Path(args.project)
    start = time.perf_counter()
    if args.check:
        plan = build(root)
        jobs = sum(m.jobs for m in plan.matrices.values())
        print(f"assay: specs are valid ({len(plan.validated.scenarios)} scenarios, {jobs} trials)")
        return 0
    result = compile_project(root, generated=Path(args.out) if args.out else None, force=args.force)
    took = time.perf_counter() - start
    if args.format == "json":
        matrices = {mid: mp.jobs for mid, mp in result.plan.matrices.items()} if result.plan else {}
        print(
            json.dumps(
                {
                    "up_to_date": result.up_to_date,
                    "trials": result.jobs,
                    "written": result.written,
                    "matrices": matrices,
                    "seconds": round(took, 3),
                },
                sort_keys=True,
            )
        )
        return 0
    if result.up_to_date:
        print(f"assay: generated/ is up to date ({took:.2f}s)")
    else:
        print(f"assay: compiled {result.jobs} trials, {result.written} file(s) written ({took:.2f}s)")
        if result.plan is not None:
            for mid, mp in result.plan.matrices.items():
                mark = " (default)" if (mp.matrix or mid) == result.plan.default else ""
                if not mp.jobs:
                    print(f"  {mid}{mark}: 0 trials: no scenario matches its `scenarios:` (yet)")
                    continue
                print(
                    f"  {mid}{mark}: {mp.jobs} trials ({len(mp.runs)} scenarios, {len(mp.cells)} cells,"
                    f" {len(mp.agents)} agents, {mp.trials} per variant)"
                )
    return 0
