"""`assay plan`: how many trials a cell needs to detect an uplift over the control at a chosen power."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from harness.errors import UsageError

HELP = "trials per cell needed to detect an uplift over the control (power planning)"


def _unit(value: str) -> float:
    x = float(value)
    if not 0.0 <= x <= 1.0:
        raise argparse.ArgumentTypeError(f"{value} is not between 0 and 1")
    return x


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--control-rate", type=_unit, default=None, help="expected pass rate of the control (0..1)"
    )
    parser.add_argument(
        "--from",
        dest="source",
        type=Path,
        default=None,
        help="a report's summary.json: take the control rate and the scenario count from it",
    )
    parser.add_argument(
        "--uplift", type=float, default=None, help="uplift to detect, e.g. 0.2 for +20 points"
    )
    parser.add_argument(
        "--runs",
        type=int,
        default=None,
        help="instead: the smallest uplift this many graded runs per condition detect",
    )
    parser.add_argument("--power", type=_unit, default=0.8, help="power (default 0.8)")
    parser.add_argument(
        "--alpha", type=_unit, default=0.05, help="two-sided significance level (default 0.05)"
    )
    parser.add_argument(
        "--scenarios", type=int, default=1, help="scenarios per condition: trials per cell = runs / scenarios"
    )


def execute(args: argparse.Namespace) -> int:
    from harness.report.stats import detectable_uplift, runs_needed

    if args.scenarios < 1:
        raise UsageError("--scenarios must be at least 1")
    if args.source is not None:
        args.control_rate, args.scenarios = _from_summary(args.source)
    if args.control_rate is None:
        raise UsageError("give --control-rate (or --from <summary.json>)")
    p0: float = args.control_rate
    method = "normal approximation for two proportions (Fleiss), conservative for paired runs"
    if args.runs is not None:
        d = detectable_uplift(p0, args.runs, power=args.power, alpha=args.alpha)
        if d is None:
            print(
                f"{args.runs} graded runs per condition cannot detect any uplift over a control at {p0:.2f} "
                f"with power {args.power:.2f} (alpha {args.alpha})"
            )
            return 1
        print(
            f"smallest detectable uplift: +{d:.3f} (control {p0:.2f} -> {p0 + d:.2f}) with {args.runs} runs per condition, "
            f"power {args.power:.2f}, alpha {args.alpha} [{method}]"
        )
        return 0
    if args.uplift is None:
        raise UsageError("give --uplift (runs needed) or --runs (detectable uplift)")
    n = runs_needed(p0, args.uplift, power=args.power, alpha=args.alpha)
    if n is None:
        raise UsageError(f"control {p0:.2f} + uplift {args.uplift:+.2f} is not a rate between 0 and 1")
    per_cell = math.ceil(n / args.scenarios)
    print(
        f"graded runs per condition: {n} (control {p0:.2f} -> {p0 + args.uplift:.2f}, power {args.power:.2f}, "
        f"alpha {args.alpha}) [{method}]"
    )
    print(
        f"trials per cell: {per_cell} over {args.scenarios} scenario(s); add margin for failed-to-run and invalid runs"
    )
    return 0


def _from_summary(path: Path) -> tuple[float, int]:
    """The control's pooled pass rate and the scenario count of a stored report."""
    from harness.artifacts.store import FutureSchemaError
    from harness.report.summary import read_summary

    try:
        summary = read_summary(path)
    except (OSError, ValueError, FutureSchemaError) as exc:
        raise UsageError(f"{path}: not a readable summary.json ({exc})") from exc
    rows = [g for g in summary.groups if g.by == "condition" and g.control]
    k, n = sum(g.passed.k for g in rows), sum(g.passed.n for g in rows)
    if not n:
        raise UsageError(f"{path}: the report has no graded control runs")
    print(
        f"from {path}: control {summary.header.control} passed {k}/{n}; {len(summary.header.scenarios)} scenario(s)"
    )
    return k / n, max(1, len(summary.header.scenarios))
