"""Which runs left the denominator, per agent and condition, and whose evidence disagreed.

A rate is k/n over graded runs; a run that is invalid, failed to run or is ungradeable is in
no n. That is right when the cause is on the harness's side, and a bias when it is not evenly
spread: a treatment that loses its failing runs to exclusions looks better than its control.
So exclusions are kept for causes on the harness's side, the report lists the exclusions of every
agent and condition with their reasons, and warns when a treatment and its control did not lose the
same share of their runs. What the agent's own doing ended early (a timeout, a limit, an exit, an
exit 75 nothing on the harness's side explains, a failed earlier session) stays in the rates,
graded on what it left, and is counted per agent and condition beside the exclusions. It also
counts the runs whose adapter reported usage other than the gateway's own account (the gateway's
is the one used), the passing runs that changed files outside their scenario's `writable` (a check
that reads such a file judged the agent's copy of it), and the runs with usage but no price, whose
condition then shows no USD at all (a mean over the priced runs alone could be steered).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from typing import Literal

from harness.report.collect import RunFacts
from harness.report.diagnostics import Evidence
from harness.report.summary import Diagnostic

EXCLUDED = ("invalid", "failed_to_run", "ungradeable")
"""Statuses that take a run out of every rate (ungraded runs are a to-do, not an exclusion)."""

REASONS = 5
"""Distinct reasons kept per condition for unpriced runs (the rest are counted together)."""

Cond = tuple[str | None, str, str]
"""(version, agent, condition)"""

ENDED = {
    "timeout": "timed out",
    "output": "passed the output cap",
    "limit": "stopped by a sandbox limit",
    "exit": "exited non-zero or was killed",
    "claimed_infra": "exited 75 (provider failure) with none seen by the harness",
    "blocked": "left a tree the next session could not start in",
}
"""`AgentEnd.cause` -> how the report says it."""


def _ordered(conds: Iterable[Cond]) -> list[Cond]:
    """Conditions in reading order: version, agent, condition."""
    return sorted(conds, key=lambda c: (str(c[0]), c[1], c[2]))


def _listed(reasons: Counter[str]) -> str:
    """`reason (n); other (m)`, alphabetical."""
    return "; ".join(f"{reason} ({n})" for reason, n in sorted(reasons.items()))


def _by_reason(
    kind: str,
    severity: Literal["info", "warning"],
    reasons: dict[Cond, Counter[str]],
    evidence: dict[Cond, Evidence],
    say: Callable[[Cond, int, str], str],
) -> list[Diagnostic]:
    """One diagnostic per condition with counted reasons: `say(cond, runs, "reason (n); ...")`."""
    return [
        Diagnostic(
            kind=kind,
            severity=severity,
            message=say(cond, sum(reasons[cond].values()), _listed(reasons[cond])),
            evidence=evidence[cond].listing(),
        )
        for cond in _ordered(reasons)
    ]


def _name(cond: Cond) -> str:
    version, agent, condition = cond
    return f"{agent} {condition}" + (f" @{version}" if version else "")


class Integrity:
    """Exclusions by agent and condition, and usage disagreements; streamed, mergeable."""

    def __init__(self) -> None:
        self.runs: Counter[Cond] = Counter()
        self.excluded: dict[Cond, Counter[str]] = defaultdict(Counter)
        self.evidence: dict[Cond, Evidence] = defaultdict(Evidence)
        self.ended: dict[Cond, Counter[str]] = defaultdict(Counter)
        """Graded runs the agent's own doing ended, by cause."""
        self.ended_evidence: dict[Cond, Evidence] = defaultdict(Evidence)
        self.claimed = Evidence()
        """Runs whose exit 75 nothing on the harness's side explained (graded as the agent's own)."""
        self.context = Evidence()
        """Runs whose context.json named unexpected context or was unreadable (advisory)."""
        self.controls: set[Cond] = set()
        self.usage: dict[str, Evidence] = defaultdict(Evidence)
        self.unsafe: dict[Cond, Evidence] = defaultdict(Evidence)
        """Passing runs that changed files outside their scenario's `writable`."""
        self.unpriced: dict[Cond, Counter[str]] = defaultdict(Counter)
        """Graded runs with usage but no cost, by why."""
        self.unpriced_evidence: dict[Cond, Evidence] = defaultdict(Evidence)

    def add(self, run: RunFacts) -> None:
        cond = (run.version, run.agent, run.condition)
        self.runs[cond] += 1
        if run.control:
            self.controls.add(cond)
        if run.status in EXCLUDED:
            self.excluded[cond][f"{run.status}: {run.reason or '(no reason recorded)'}"] += 1
            self.evidence[cond].add(run.dir)
        elif run.agent_end is not None:
            self.ended[cond][ENDED.get(run.agent_end, run.agent_end)] += 1
            self.ended_evidence[cond].add(run.dir)
        if run.agent_end == "claimed_infra":
            self.claimed.add(run.dir)
        if run.context_advisory:
            self.context.add(run.dir)
        if run.usage_differs:
            self.usage[run.agent].add(run.dir)
        if run.status == "graded" and run.passed and run.unsafe_edits:
            self.unsafe[cond].add(run.dir)
        if run.status == "graded" and run.unpriced is not None:
            why = self.unpriced[cond]
            # the model's name is the agent's to write: a few reasons kept, never one per run
            why[run.unpriced if run.unpriced in why or len(why) < REASONS else "other reasons"] += 1
            self.unpriced_evidence[cond].add(run.dir)

    def merge(self, other: Integrity) -> None:
        """Fold in another part of the tree."""
        self.runs.update(other.runs)
        for cond, reasons in other.excluded.items():
            self.excluded[cond].update(reasons)
        for cond, ev in other.evidence.items():
            self.evidence[cond].merge(ev)
        for cond, causes in other.ended.items():
            self.ended[cond].update(causes)
        for cond, ev in other.ended_evidence.items():
            self.ended_evidence[cond].merge(ev)
        self.claimed.merge(other.claimed)
        self.context.merge(other.context)
        self.controls |= other.controls
        for agent, ev in other.usage.items():
            self.usage[agent].merge(ev)
        for cond, ev in other.unsafe.items():
            self.unsafe[cond].merge(ev)
        for cond, why in other.unpriced.items():
            self.unpriced[cond].update(why)
        for cond, ev in other.unpriced_evidence.items():
            self.unpriced_evidence[cond].merge(ev)

    def _share(self, cond: Cond) -> str:
        return f"{sum(self.excluded[cond].values())}/{self.runs[cond]}"

    def diagnostics(self, skip: set[str] | frozenset[str] = frozenset()) -> list[Diagnostic]:
        """Exclusions per agent and condition; a warning where a treatment's share differs from its
        control's; usage reports that disagree with the gateway. Agents in `skip` (sanity bounds) are
        never compared."""
        out: list[Diagnostic] = []
        out += _by_reason(
            "excluded",
            "info",
            self.excluded,
            self.evidence,
            lambda cond, n, listed: (
                f"{_name(cond)}: {n}/{self.runs[cond]} runs excluded from its rates: {listed}"
            ),
        )
        out += _by_reason(
            "agent-ended",
            "info",
            self.ended,
            self.ended_evidence,
            lambda cond, n, listed: (
                f"{_name(cond)}: {n}/{self.runs[cond]} runs ended by the agent's own doing, graded on what "
                f"they left (in its rates): {listed}"
            ),
        )
        for cond in _ordered(self.runs):
            control = next((c for c in self.controls if c[:2] == cond[:2]), None)
            if cond in self.controls or control is None or cond[1] in skip:
                continue
            mine, theirs = sum(self.excluded[cond].values()), sum(self.excluded[control].values())
            if mine * self.runs[control] != theirs * self.runs[cond]:
                out.append(
                    Diagnostic(
                        kind="exclusions-differ",
                        severity="warning",
                        message=(
                            f"{_name(cond)} lost {self._share(cond)} runs to exclusions, its control "
                            f"{control[2]} {self._share(control)}: the rates compare different denominators"
                        ),
                        evidence=self.evidence[cond].listing() + self.evidence[control].listing(),
                    )
                )
        if self.claimed.count:
            out.append(
                Diagnostic(
                    kind="claimed-infra",
                    severity="warning",
                    message=f"{self.claimed.count} run(s) exited 75 (provider or infrastructure failure) after "
                    "their retries, but the harness saw no such failure (no failed request in the model gateway's "
                    "log): graded as the agent's own exit, in its rates",
                    evidence=self.claimed.listing(),
                )
            )
        if self.context.count:
            out.append(
                Diagnostic(
                    kind="context-advisory",
                    severity="info",
                    message=f"{self.context.count} run(s) reported unexpected or unreadable loaded context "
                    "(context.json): advisory, since the agent writes it; the runs are graded and counted",
                    evidence=self.context.listing(),
                )
            )
        for agent, ev in sorted(self.usage.items()):
            out.append(
                Diagnostic(
                    kind="usage-disagrees",
                    severity="warning",
                    message=(
                        f"{agent}: in {ev.count} run(s) the adapter's usage.jsonl differs from the model "
                        "gateway's own account; the gateway's is the one counted"
                    ),
                    evidence=ev.listing(),
                )
            )
        for cond in _ordered(self.unsafe):
            ev = self.unsafe[cond]
            out.append(
                Diagnostic(
                    kind="unsafe-edits",
                    severity="warning",
                    message=(
                        f"{_name(cond)}: {ev.count} passing run(s) changed files outside their scenario's "
                        "`writable`; a check that reads such a file judged the agent's copy of it (an "
                        "`unchanged` check on those files fails such a run): read the diffs before trusting the rate"
                    ),
                    evidence=ev.listing(),
                )
            )
        out += _by_reason(
            "unpriced",
            "warning",
            self.unpriced,
            self.unpriced_evidence,
            lambda cond, n, listed: (
                f"{_name(cond)}: {n}/{self.runs[cond]} run(s) reported usage that could not be priced "
                f"({listed}): no USD is given for it"
            ),
        )
        return out
