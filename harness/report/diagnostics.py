"""Diagnostics, findings by layer, and the per-condition tables of grade sections.

Everything here is accumulated while streaming, with evidence capped per item (the first
`EVIDENCE_CAP` run directories plus a count), so a 100,000-run tree costs a few counters.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, TypeVar

from harness.report.accumulate import rate
from harness.report.collect import RunFacts
from harness.report.design import EVIDENCE_CAP, no_discrimination, power, sanity_bounds
from harness.report.sections import digest
from harness.report.summary import CaseRow, Diagnostic, ExpectationRow, Finding, Group, SectionRow, Uplift

HEADROOM = 0.95

CondKey = tuple[str | None, str, str]
FindingKind = Literal["failed-layer", "disagreement", "notable-exit"]


@dataclass(slots=True)
class Evidence:
    """A count with the first few run directories (in path order) that show it.

    Whatever order runs arrive in (one walk or several workers), the kept ones are the
    EVIDENCE_CAP smallest paths, so the report does not depend on how the tree was read.
    """

    count: int = 0
    runs: list[str] = field(default_factory=list)

    def add(self, run_dir: str) -> None:
        self.count += 1
        self.runs.append(run_dir)
        if len(self.runs) >= 4 * EVIDENCE_CAP:
            self.runs = sorted(self.runs)[:EVIDENCE_CAP]

    def merge(self, other: Evidence) -> None:
        """Fold in another part's evidence."""
        self.count += other.count
        self.runs = sorted(self.runs + other.runs)[:EVIDENCE_CAP]

    def listing(self) -> list[str]:
        kept = sorted(self.runs)[:EVIDENCE_CAP]
        more = self.count - len(kept)
        return kept + ([f"... and {more} more"] if more > 0 else [])


class DiagAcc:
    """Counters behind the diagnostics, findings and section tables."""

    def __init__(self) -> None:
        self.by_status: dict[tuple[str, str], Evidence] = defaultdict(Evidence)
        self.infra = Evidence()
        self.exits: dict[int, Evidence] = defaultdict(Evidence)
        self.regrade = Evidence()
        self.unreadable = Evidence()
        self.unreadable_reasons: dict[str, str] = {}
        self.regrade_changed_grader = Evidence()
        self.limits: dict[str, Evidence] = defaultdict(Evidence)
        """Limit name -> runs that hit it."""
        self.unprotected: dict[str, Evidence] = defaultdict(Evidence)
        """A sandbox protection that did not hold -> runs it concerns."""
        self.flaky: dict[tuple[str, str], Evidence] = defaultdict(Evidence)
        self.checks: dict[tuple[str, str, str], list[int]] = {}
        """(scenario, check, agent) -> [graded runs, failed or errored]."""
        self.findings: dict[tuple[str, FindingKind, str], Evidence] = defaultdict(Evidence)
        self.sections: dict[tuple[str | None, str, str, str, str], list[float]] = {}
        self.section_runs: Counter[tuple[str | None, str, str, str]] = Counter()
        self.expectations: dict[tuple[str | None, str, str, str], list[int]] = {}
        self.tests: dict[tuple[str | None, str, str, str, str], list[int]] = {}
        """(version, agent, condition, scenario, check::test) -> [passed, graded]."""

    def merge(self, other: DiagAcc) -> None:
        """Fold in the counters of another part of the tree."""
        for status_key, ev in other.by_status.items():
            self.by_status[status_key].merge(ev)
        for code, ev in other.exits.items():
            self.exits[code].merge(ev)
        for check_key, ev in other.flaky.items():
            self.flaky[check_key].merge(ev)
        for finding_key, ev in other.findings.items():
            self.findings[finding_key].merge(ev)
        for limit, ev in other.limits.items():
            self.limits[limit].merge(ev)
        for why, ev in other.unprotected.items():
            self.unprotected[why].merge(ev)
        self.infra.merge(other.infra)
        self.unreadable.merge(other.unreadable)
        for run_dir, reason in other.unreadable_reasons.items():
            if len(self.unreadable_reasons) < 1000:
                self.unreadable_reasons.setdefault(run_dir, reason)
        self.regrade.merge(other.regrade)
        self.regrade_changed_grader.merge(other.regrade_changed_grader)
        for table in ("checks", "expectations", "sections", "tests"):
            mine_t, theirs_t = getattr(self, table), getattr(other, table)
            for key, values in theirs_t.items():
                acc = mine_t.setdefault(key, [0] * len(values))
                for i, v in enumerate(values):
                    acc[i] += v
        self.section_runs.update(other.section_runs)

    def add(self, run: RunFacts) -> None:
        if run.status != "graded":
            self.by_status[(run.status, run.reason or "(no reason recorded)")].add(run.dir)
        if (run.infra_retries or run.exit_code == 75) and run.agent_end != "claimed_infra":
            self.infra.add(run.dir)  # a claim nothing on the harness's side shows: `claimed-infra`
        for limit in run.limits_hit:
            self.limits[limit].add(run.dir)
        for why in run.unprotected:
            self.unprotected[why].add(run.dir)
        if run.exit_code not in (None, 0, 75):
            self.exits[run.exit_code].add(run.dir)
        if run.regrade is not None:
            changed = (run.regrade.before_passed, run.regrade.before_usable) != (run.passed, run.usable)
            if changed:
                (self.regrade_changed_grader if run.regrade.grader_changed else self.regrade).add(run.dir)
            if not run.regrade.grader_changed:
                for flipped in run.regrade.flipped_checks:
                    self.flaky[(run.scenario, flipped)].add(run.dir)
        if run.status != "graded":
            return
        for check in run.checks:
            for case_id, case_outcome in check.tests:
                row = self.tests.setdefault(
                    (run.version, run.agent, run.condition, run.scenario, f"{check.id}::{case_id}"), [0, 0]
                )
                row[0] += case_outcome != "fail"
                row[1] += 1
            tally = self.checks.setdefault((run.scenario, check.id, run.agent), [0, 0])
            tally[0] += 1
            if check.outcome in ("fail", "error"):
                tally[1] += 1
                if check.layer != "agent":
                    self.findings[
                        (
                            check.layer,
                            "failed-layer",
                            f"{run.scenario}: check {check.id} ({check.kind}) {check.outcome}",
                        )
                    ].add(run.dir)
        for layer in run.failed_layers:
            if layer != "agent" and not any(c.layer == layer for c in run.checks):
                self.findings[(layer, "failed-layer", f"{run.scenario}: layer failed")].add(run.dir)
        d = run.digest if run.digest is not None else digest(run.sections)
        for detail in d.disagreements:
            self.findings[("authorities", "disagreement", f"{run.scenario}: {detail}")].add(run.dir)
        for exit_detail in d.notable_exits:
            self.findings[("tool", "notable-exit", f"{run.scenario}: {exit_detail}")].add(run.dir)
        cond: CondKey = (run.version, run.agent, run.condition)
        for section, leaves in d.numeric:
            self.section_runs[(*cond, section)] += 1
            for path, number in leaves:
                acc = self.sections.setdefault((*cond, section, path), [0.0])
                acc[0] += number
        for exp_id, verdict in d.expectations:
            acc3 = self.expectations.setdefault((*cond, exp_id), [0, 0, 0])
            acc3[0 if verdict == "pass" else 2 if verdict == "unavailable" else 1] += 1

    def section_rows(self, order: dict[str, int], graded: dict[CondKey, int]) -> list[SectionRow]:
        """Rows by version, agent, condition in reading order, then section and key; per run is over
        every graded run of the condition (`graded`), not only the runs that reported the section."""
        rows = []
        for (version, agent, condition, section, path), (total,) in sorted(
            self.sections.items(),
            key=lambda kv: (str(kv[0][0]), kv[0][1], order.get(kv[0][2], 1 << 30), kv[0][3:]),
        ):
            runs = self.section_runs[(version, agent, condition, section)]
            denominator = max(graded.get((version, agent, condition), 0), runs)
            rows.append(
                SectionRow(
                    section=section,
                    key=path,
                    version=version,
                    agent=agent,
                    condition=condition,
                    runs=runs,
                    graded=denominator,
                    total=total,
                    per_run=total / denominator if denominator else 0.0,
                )
            )
        return rows

    def expectation_rows(self, order: dict[str, int]) -> list[ExpectationRow]:
        """Rows by version, agent, condition in reading order, then expectation."""
        return [
            ExpectationRow(expectation=e, version=v, agent=a, condition=c, rate=rate(p, p + f), unavailable=u)
            for (v, a, c, e), (p, f, u) in sorted(
                self.expectations.items(),
                key=lambda kv: (str(kv[0][0]), kv[0][1], order.get(kv[0][2], 1 << 30), kv[0][3]),
            )
        ]

    def test_rows(self, order: dict[str, int]) -> list[CaseRow]:
        """Rows by scenario, test, then version, agent, condition in reading order."""
        return [
            CaseRow(test=t, scenario=s, version=v, agent=a, condition=c, rate=rate(k, n))
            for (v, a, c, s, t), (k, n) in sorted(
                self.tests.items(),
                key=lambda kv: (kv[0][3], kv[0][4], str(kv[0][0]), kv[0][1], order.get(kv[0][2], 1 << 30)),
            )
        ]

    def finding_rows(self) -> list[Finding]:
        return [
            Finding(
                layer=layer,
                kind=kind,
                detail=f"{detail} ({ev.count} run{'s' if ev.count != 1 else ''})",
                runs=ev.listing(),
            )
            for (layer, kind, detail), ev in sorted(self.findings.items())
        ]

    def diagnostics(
        self,
        *,
        control: str | None,
        control_note: str,
        cells: list[Group],
        uplifts: list[Uplift],
        condition_rows: list[Group],
        sanity: dict[str, str] | None = None,
    ) -> list[Diagnostic]:
        sanity = sanity or {}
        out: list[Diagnostic] = []
        if control is None:
            out.append(Diagnostic(kind="no-control", severity="warning", message=control_note))
        out.extend(sanity_bounds(cells, sanity))
        for row in condition_rows:
            if row.agent in sanity:
                continue  # an oracle is meant to score 1.00: no headroom is its job, not a finding
            if row.control and row.usable.n and row.usable.k / row.usable.n >= HEADROOM:
                out.append(
                    Diagnostic(
                        kind="headroom",
                        severity="warning",
                        message=f"no headroom: control {row.condition} for {row.agent} is usable {row.usable} (>= {HEADROOM:.0%}); an uplift cannot show",
                        evidence=[
                            f"{c.key}: usable {c.usable}"
                            for c in cells
                            if c.control and c.agent == row.agent and c.version == row.version
                        ],
                    )
                )
        if self.unreadable.count:
            out.append(
                Diagnostic(
                    kind="unreadable",
                    severity="error",
                    message=f"{self.unreadable.count} run.json file(s) could not be read; those runs are in no count",
                    evidence=[
                        f"{d}: {self.unreadable_reasons.get(d, '')}" for d in self.unreadable.listing()
                    ],
                )
            )
        if self.infra.count:
            out.append(
                Diagnostic(
                    kind="infra",
                    severity="warning",
                    message=f"{self.infra.count} run(s) hit a provider or infrastructure failure (exit 75 / retries)",
                    evidence=self.infra.listing(),
                )
            )
        out += _each(
            "sandbox",
            "error",
            self.unprotected,
            lambda why, n: f"{n} run(s) ran without a sandbox protection: {why}",
        )
        out += _each(
            "limit",
            "warning",
            self.limits,
            lambda limit, n: (
                f"{n} run(s) hit the {limit} limit (see limits_hit in run.json; graded on what they left)"
            ),
        )
        out += _each(
            "agent-exit",
            "warning",
            self.exits,
            lambda code, n: f"{n} run(s) ended with agent exit code {code} (the agent's own exit: graded)",
        )
        labels = {
            "invalid": "invalid runs (excluded from rates)",
            "failed_to_run": "failed to run (no evidence; not counted as failures)",
            "ungradeable": "ungradeable (no evidence; not counted as failures)",
            "ungraded": "not graded yet (run `assay grade` or `assay report --regrade`)",
        }
        for status in ("invalid", "failed_to_run", "ungradeable", "ungraded"):
            for (_, reason), ev in sorted(kv for kv in self.by_status.items() if kv[0][0] == status):
                out.append(
                    Diagnostic(
                        kind=status,
                        severity="warning" if status != "ungraded" else "info",
                        message=f"{ev.count} {labels[status]}: {reason}",
                        evidence=ev.listing(),
                    )
                )
        mixed = [c for c in cells if c.trial_variance]
        if mixed:
            out.append(
                Diagnostic(
                    kind="variance",
                    severity="info",
                    message=f"{len(mixed)} of {len(cells)} cells have trials that disagree (pass variance > 0)",
                    evidence=[
                        f"{c.key} {c.agent} {c.condition}{' @' + c.version if c.version else ''}: passed {c.passed}, variance {c.trial_variance:.3f}"
                        for c in mixed[:EVIDENCE_CAP]
                    ],
                )
            )
        if self.regrade.count:
            out.append(
                Diagnostic(
                    kind="regrade",
                    severity="warning",
                    message=f"{self.regrade.count} run(s) got a different verdict when regraded on the same stored workspace",
                    evidence=self.regrade.listing(),
                )
            )
        if self.regrade_changed_grader.count:
            out.append(
                Diagnostic(
                    kind="regrade-changed-grader",
                    severity="info",
                    message=f"{self.regrade_changed_grader.count} run(s) changed verdict on regrade after the grader "
                    "or the checks changed (new grader hash): expected, listed for review",
                    evidence=self.regrade_changed_grader.listing(),
                )
            )
        for (scenario, check), ev in sorted(self.flaky.items()):
            out.append(
                Diagnostic(
                    kind="flaky-check",
                    severity="warning",
                    message=f"check {scenario}/{check} changed verdict on regrade of an unchanged workspace in {ev.count} run(s)",
                    evidence=ev.listing(),
                )
            )
        measured: dict[tuple[str, str], list[int]] = {}
        for (scenario, check, agent), (n, fails) in self.checks.items():
            if agent not in sanity:  # a no-op failing every check is its job, not the check's signal
                tally = measured.setdefault((scenario, check), [0, 0])
                tally[0] += n
                tally[1] += fails
        quiet = sorted(f"{s}/{c} ({n} runs)" for (s, c), (n, fails) in measured.items() if n and not fails)
        if quiet:
            out.append(
                Diagnostic(
                    kind="no-signal-check",
                    severity="info",
                    message=f"{len(quiet)} check(s) never failed in any arm of a measured agent: they carry no "
                    "signal here",
                    evidence=quiet[:EVIDENCE_CAP],
                )
            )
        out.extend(no_discrimination([c for c in cells if c.agent not in sanity]))
        out.extend(power(uplifts))
        return out


K = TypeVar("K", str, int)


def _each(
    kind: str,
    severity: Literal["info", "warning", "error"],
    table: dict[K, Evidence],
    message: Callable[[K, int], str],
) -> list[Diagnostic]:
    """One diagnostic per key of a table of evidence, in key order."""
    return [
        Diagnostic(kind=kind, severity=severity, message=message(key, ev.count), evidence=ev.listing())
        for key, ev in sorted(table.items())
    ]
