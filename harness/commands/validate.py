"""`assay validate`: do the scenarios' checks tell finished work from unfinished work?

Compiles the specs in-process (spec errors: exit 2), then for every selected scenario
assesses its reference, its untouched seed and each negative (see harness.validity).
Every failure is printed as `<scenario> [<overlay>] check <id>: <message>`; exit 1 when
any is found (uncovered checks count only with --strict).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from harness.errors import NothingSelected, UsageError

HELP = "check scenario validity: reference passes, seed fails, negatives fail exactly what they name"


def configure(parser: argparse.ArgumentParser) -> None:
    """Arguments of `assay validate`."""
    parser.add_argument(
        "--scenario", nargs="+", action="extend", default=[], metavar="ID", help="only these scenarios"
    )
    parser.add_argument("--strict", action="store_true", help="a check that no negative fails is an error")
    parser.add_argument(
        "--jobs", type=int, default=None, help="workspaces assessed at once (default: cores, max 4)"
    )
    parser.add_argument("--format", choices=("text", "json"), default="text", help="report format on stdout")
    parser.add_argument("--quiet", action="store_true", help="print only problems and the summary line")


def execute(args: argparse.Namespace) -> int:
    """Compile, assess, print; 0 valid, 1 invalid, 2 spec errors, 3 nothing selected."""
    from compiler.pipeline import build
    from harness.sandbox import isolation, scenario
    from harness.validity import validate

    root = Path(args.project).resolve()
    plan = build(root)
    scenarios = {sid: s.job for sid, s in sorted(plan.validated.scenarios.items())}
    unknown = [s for s in args.scenario if s not in scenarios]
    if unknown:
        raise UsageError(
            f"unknown scenario(s): {', '.join(unknown)}; known: {', '.join(scenarios) or '(none)'}"
        )
    chosen = [scenarios[s] for s in (sorted(set(args.scenario)) or scenarios)]
    if not chosen:
        raise NothingSelected("no scenario to validate (scenarios/ is empty)")
    scenario.prepare(((s, isolation.select("auto").name) for s in chosen), root)  # "cannot run here" first
    report = validate(chosen, root, strict=args.strict, jobs=args.jobs)
    if args.format == "json":
        print(json.dumps(as_json(report), indent=2, sort_keys=True))
    else:
        print(as_text(report, quiet=args.quiet))
    return 0 if report.ok else 1


def as_text(report: object, *, quiet: bool = False) -> str:
    """The human report: problems, coverage table, summary."""
    from harness.validity import ValidityReport

    assert isinstance(report, ValidityReport)
    lines = [f"error: {p.line()}" for p in report.problems]
    if not report.strict:
        lines += [f"warning: {p.line()} (an error with --strict)" for p in report.uncovered]
    if not quiet:
        lines.append("")
        lines.append("check coverage (declared: negatives that name each check; observed: what failed it):")
        rows = []
        for s in report.scenarios:
            seen = dict(s.observed)
            for cid, names in s.coverage:
                failed = seen.get(cid, ())
                rows.append(
                    (s.scenario, cid, ", ".join(names) or "-- none --", ", ".join(failed) or "-- none --")
                )
            rows += [(s.scenario, cid, "(not validated: needs a run)", "") for cid in s.not_validated]
        heads = ("scenario", "check", "declared")
        width = [max([len(r[i]) for r in rows] + [len(h)]) for i, h in enumerate(heads)]
        lines.append(f"  {'scenario':<{width[0]}}  {'check':<{width[1]}}  {'declared':<{width[2]}}  observed")
        lines += [f"  {a:<{width[0]}}  {b:<{width[1]}}  {c:<{width[2]}}  {d}".rstrip() for a, b, c, d in rows]
        lines.append("")
    workspaces = sum(s.workspaces for s in report.scenarios)
    verdict = "valid" if report.ok else f"INVALID ({len(report.problems)} problem(s))"
    lines.append(
        f"validate: {len(report.scenarios)} scenario(s), {workspaces} workspaces, {report.check_runs} check runs"
        f" in {report.duration_s:.1f}s: {verdict}; {len(report.uncovered)} uncovered check(s)"
    )
    return "\n".join(lines).lstrip("\n")


def as_json(report: object) -> dict[str, object]:
    """The machine report."""
    from harness.validity import ValidityReport

    assert isinstance(report, ValidityReport)
    return {
        "ok": report.ok,
        "strict": report.strict,
        "duration_s": report.duration_s,
        "check_runs": report.check_runs,
        "problems": [vars(p) for p in report.problems],
        "uncovered": [vars(p) for p in report.uncovered],
        "scenarios": [
            {
                "id": s.scenario,
                "workspaces": s.workspaces,
                "coverage": {cid: list(n) for cid, n in s.coverage},
                "observed": {cid: list(n) for cid, n in s.observed},
                "not_validated": list(s.not_validated),
            }
            for s in report.scenarios
        ],
    }
