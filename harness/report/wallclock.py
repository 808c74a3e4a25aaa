"""Wall-clock is comparable only between runs executed the same way (serially, or concurrently).

A run executed alongside sibling trials (`concurrent` in run.json: `--parallel` above 1, or an
executor that packs workers) carries their contention in its `duration_s`; turns, tokens and
cost are unaffected. When a tree mixes the two modes — most dangerously across the two sides
of a version comparison, where a mode difference reads as a timing regression — the report
says so: a diagnostic listing the runs of each mode, and, for a version comparison whose
sides differ, a refusal to read duration deltas between them.
"""

from __future__ import annotations

from collections import Counter

from harness.report.diagnostics import Evidence
from harness.report.summary import Diagnostic

MODES = {True: "concurrently", False: "serially"}


class WallClock:
    """Counts runs by (version, concurrent), with a few run directories of each as evidence."""

    def __init__(self) -> None:
        self.counts: Counter[tuple[str | None, bool]] = Counter()
        self.evidence: dict[bool, Evidence] = {True: Evidence(), False: Evidence()}

    def add(self, version: str | None, concurrent: bool, run_dir: str) -> None:
        self.counts[(version, concurrent)] += 1
        self.evidence[concurrent].add(run_dir)

    def merge(self, other: WallClock) -> None:
        """Fold in another part of the tree."""
        self.counts.update(other.counts)
        for mode, ev in other.evidence.items():
            self.evidence[mode].merge(ev)

    def _mode(self, version: str | None) -> bool | None:
        """True/False when every run of the version ran in that mode, None when mixed or absent."""
        modes = {c for (v, c), n in self.counts.items() if v == version and n}
        return modes.pop() if len(modes) == 1 else None

    def diagnostics(self, baseline: str | None, candidate: str | None) -> list[Diagnostic]:
        """What a reader must know before comparing durations."""
        out: list[Diagnostic] = []
        together = sum(n for (_v, c), n in self.counts.items() if c)
        alone = sum(n for (_v, c), n in self.counts.items() if not c)
        if together and alone:
            out.append(
                Diagnostic(
                    kind="wall-clock",
                    severity="warning",
                    message=(
                        f"{together} run(s) executed concurrently with sibling trials and {alone} serially: "
                        "their duration_s (wall-clock) is not comparable; compare turns, tokens and cost instead"
                    ),
                    evidence=[f"concurrent: {d}" for d in self.evidence[True].listing()[:5]]
                    + [f"serial: {d}" for d in self.evidence[False].listing()[:5]],
                )
            )
        if baseline and candidate:
            base, cand = self._mode(baseline), self._mode(candidate)
            if base is not None and cand is not None and base != cand:
                out.append(
                    Diagnostic(
                        kind="wall-clock",
                        severity="warning",
                        message=(
                            f"version comparison: {baseline} ran {MODES[base]} and {candidate} {MODES[cand]}; "
                            "a duration difference between them is contention, not the tool: not compared"
                        ),
                    )
                )
        return out
