"""`assay plan`: how many trials a cell needs to detect an uplift over the control at a chosen power."""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from harness.errors import UsageError

if TYPE_CHECKING:
    from harness.report.summary import Rate

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
        "--agent",
        default=None,
        help="with --from: plan for this agent's control (default: each measured agent in turn)",
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
    if args.scenarios < 1:
        raise UsageError("--scenarios must be at least 1")
    if args.source is None:
        if args.control_rate is None:
            raise UsageError("give --control-rate (or --from <summary.json>)")
        return _plan(args.control_rate, args.scenarios, args)
    if args.control_rate is not None:
        raise UsageError("give --control-rate or --from, not both")
    worst = 0
    for source in _from_summary(args.source, args.agent):
        print(
            f"from {args.source}: {source.agent} on the control {source.control} passed {source.passed}; "
            f"{source.scenarios} scenario(s)"
        )
        worst = max(worst, _plan(source.passed.k / source.passed.n, source.scenarios, args))
    return worst


def _plan(p0: float, scenarios: int, args: argparse.Namespace) -> int:
    """Print the plan for one control rate; 1 when no uplift is detectable with --runs."""
    from harness.report.stats import detectable_uplift, runs_needed

    method = (
        "normal approximation for two proportions (Fleiss), conservative for paired runs; it ignores how "
        "scenarios differ, which the report's clustered test does not: with few scenarios add scenarios"
    )
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
    per_cell = math.ceil(n / scenarios)
    print(
        f"graded runs per condition: {n} (control {p0:.2f} -> {p0 + args.uplift:.2f}, power {args.power:.2f}, "
        f"alpha {args.alpha}) [{method}]"
    )
    print(
        f"trials per cell: {per_cell} over {scenarios} scenario(s); add margin for failed-to-run and invalid runs"
    )
    return 0


class Source(NamedTuple):
    """One measured agent's control in a stored report."""

    agent: str
    control: str
    passed: Rate
    scenarios: int


def _from_summary(path: Path, agent: str | None) -> list[Source]:
    """The control's pass rate and the scenario count of each measured agent of a stored report.

    Each agent is planned against its own control: agents differ in skill, and the sanity agents
    (an oracle passing everything, a no-op passing nothing) measure nothing at all.
    """
    from harness.artifacts.store import FutureSchemaError
    from harness.report.accumulate import rate
    from harness.report.summary import read_summary

    try:
        summary = read_summary(path)
    except (OSError, ValueError, FutureSchemaError) as exc:
        raise UsageError(f"{path}: not a readable summary.json ({exc})") from exc
    sanity = summary.header.sanity
    measured = [a for a in summary.header.agents if a not in sanity]
    if agent is not None:
        if agent not in summary.header.agents:
            raise UsageError(f"{path}: no agent {agent!r}; agents: {', '.join(measured) or '(none)'}")
        if agent in sanity:
            raise UsageError(
                f"{path}: {agent} is a sanity agent (every run should {sanity[agent]}): nothing to plan"
            )
        measured = [agent]
    scenarios = max(1, len(summary.header.scenarios))
    out: list[Source] = []
    for name in measured:
        rows = [g for g in summary.groups if g.by == "condition" and g.control and g.agent == name]
        k, n = sum(g.passed.k for g in rows), sum(g.passed.n for g in rows)
        if n:
            out.append(Source(name, summary.header.control or "", rate(k, n), scenarios))
    if not out:
        raise UsageError(f"{path}: the report has no graded control runs of a measured agent")
    return out
