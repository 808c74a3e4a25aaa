"""Diagnostics about the design of the comparison rather than about single runs: sanity bounds that
broke their expectation, scenarios no arm can tell apart, and comparisons too weak to show anything."""

from __future__ import annotations

from collections import defaultdict

from harness.report.fmt import signed
from harness.report.summary import Diagnostic, Group, Uplift

EVIDENCE_CAP = 20
"""Evidence lines kept per diagnostic (the first ones in path order, plus a count)."""


def power(uplifts: list[Uplift]) -> list[Diagnostic]:
    """The aggregate comparisons that cannot be told from no uplift, with what this design could detect.

    Read as a reason, not a verdict: "+0.24 [-0.08, +0.56]" with 5 scenarios says the design is too
    small, and the remedy is more scenarios (the t has scenarios - 1 df), far more than more trials."""
    rows = [u for u in uplifts if u.scenario is None and u.split is None and u.pairs and not u.survives]
    if not rows:
        return []
    scenarios = sorted({u.clusters for u in rows})
    return [
        Diagnostic(
            kind="power",
            severity="warning",
            message=f"{len(rows)} of {sum(1 for u in uplifts if u.scenario is None and u.split is None)} "
            f"uplift(s) cannot be told from none with this design ({'/'.join(map(str, scenarios))} scenarios): "
            "more scenarios narrow the interval, more trials of the same scenarios much less",
            evidence=[
                f"{u.agent}{' @' + u.version if u.version else ''} {u.condition}: {signed(u.value)} "
                f"[{signed(u.low)}, {signed(u.high)}], Holm p {u.p_adjusted if u.p_adjusted is not None else 1:.3g}; "
                f"detectable at 80% power: {f'{u.detectable:.2f}' if u.detectable is not None else 'none within the headroom'}"
                for u in rows[:EVIDENCE_CAP]
            ],
        )
    ]


def sanity_bounds(cells: list[Group], sanity: dict[str, str]) -> list[Diagnostic]:
    """A sanity agent that broke its expectation: an oracle run that failed (a reference that fails a
    check, a broken grader) or a no-op run that passed (a scenario the untouched seed solves)."""
    out: list[Diagnostic] = []
    for agent, expect in sorted(sanity.items()):
        rows = [c for c in cells if c.agent == agent and c.passed.n]
        wrong = [c for c in rows if (c.passed.k < c.passed.n if expect == "pass" else c.passed.k > 0)]
        if not wrong:
            continue
        runs = sum(c.passed.n - c.passed.k if expect == "pass" else c.passed.k for c in wrong)
        what = "failed" if expect == "pass" else "passed"
        why = (
            "a reference that fails its checks, or a grader problem"
            if expect == "pass"
            else "a scenario the untouched seed already solves"
        )
        out.append(
            Diagnostic(
                kind="sanity",
                severity="warning",
                message=f"sanity agent {agent} (every run should {expect}) {what} {runs} run(s) in "
                f"{len(wrong)} scenario cell(s): {why}",
                evidence=[
                    f"{c.key} {c.condition}{' @' + c.version if c.version else ''}: passed {c.passed}"
                    for c in wrong[:EVIDENCE_CAP]
                ],
            )
        )
    return out


def no_discrimination(cells: list[Group]) -> list[Diagnostic]:
    by_scenario: dict[tuple[str | None, str, str], list[Group]] = defaultdict(list)
    for c in cells:
        if c.passed.n:
            by_scenario[(c.version, c.agent, c.key)].append(c)
    out: list[Diagnostic] = []
    for (version, agent, scenario), group in sorted(
        by_scenario.items(), key=lambda kv: tuple(str(x) for x in kv[0])
    ):
        if len(group) < 2:
            continue
        if all(g.passed.k == g.passed.n for g in group) or all(g.passed.k == 0 for g in group):
            verdict = "passes" if group[0].passed.k else "fails"
            out.append(
                Diagnostic(
                    kind="no-discrimination",
                    severity="info",
                    message=f"scenario {scenario} ({agent}{' @' + version if version else ''}): every arm {verdict}",
                    evidence=[f"{g.condition}: {g.passed}" for g in group],
                )
            )
    return out
