"""Paired uplift over the control, version deltas and control drift (methods: see stats.py)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from harness.report.accumulate import rate
from harness.report.stats import (
    ClusterSums,
    Interval,
    PairTable,
    detectable_uplift,
    mcnemar_exact,
    newcombe_paired,
    uplift_interval,
)
from harness.report.summary import ControlDrift, Rate, Uplift, VersionDelta

Outcome = tuple[bool, bool, float | None]
"""(passed, usable, tokens) of one graded run."""

PairKey = tuple[str | None, str, str, int]
"""(version, agent, scenario, trial): the runs that pair across conditions."""


@dataclass(slots=True)
class _Tally:
    a: int = 0
    b: int = 0
    c: int = 0
    d: int = 0
    token_pairs: int = 0
    tokens_t: float = 0.0
    tokens_c: float = 0.0
    clusters: dict[str, list[float]] = field(default_factory=dict)

    def add(self, scenario: str, t: Outcome, c: Outcome) -> None:
        if t[0] and c[0]:
            self.a += 1
        elif t[0]:
            self.b += 1
        elif c[0]:
            self.c += 1
        else:
            self.d += 1
        diff = float(t[0]) - float(c[0])
        sums = self.clusters.setdefault(scenario, [0.0, 0.0, 0.0])
        sums[0] += 1
        sums[1] += diff
        sums[2] += diff * diff
        if t[1] and c[1] and t[2] is not None and c[2] is not None:
            self.token_pairs += 1
            self.tokens_t += t[2]
            self.tokens_c += c[2]

    def uplift(
        self, *, scenario: str | None, version: str | None, agent: str, condition: str, control: str
    ) -> Uplift:
        table = PairTable(self.a, self.b, self.c, self.d)
        n = self.a + self.b + self.c + self.d
        clusters = [ClusterSums(int(s[0]), s[1], s[2]) for s in self.clusters.values()]
        interval, deff = uplift_interval(table, clusters) if n else (Interval(-1.0, 1.0), None)
        control_rate = rate(self.a + self.c, n)
        return Uplift(
            scenario=scenario,
            version=version,
            agent=agent,
            condition=condition,
            control=control,
            pairs=n,
            rate=rate(self.a + self.b, n),
            control_rate=control_rate,
            value=(self.b - self.c) / n if n else None,
            low=interval.low,
            high=interval.high,
            both=self.a,
            only_treatment=self.b,
            only_control=self.c,
            neither=self.d,
            mcnemar_p=mcnemar_exact(self.b, self.c),
            clusters=len(self.clusters),
            design_effect=deff,
            token_pairs=self.token_pairs,
            tokens_treatment=self.tokens_t / self.token_pairs if self.token_pairs else None,
            tokens_control=self.tokens_c / self.token_pairs if self.token_pairs else None,
            detectable=detectable_uplift(control_rate.k / n, n) if n else None,
        )


class Pairs:
    """Graded outcomes keyed for pairing; a few tuples per run, no transcripts."""

    def __init__(self) -> None:
        self.outcomes: dict[PairKey, dict[str, Outcome]] = defaultdict(dict)

    def add(self, key: PairKey, condition: str, outcome: Outcome) -> None:
        self.outcomes[key][condition] = outcome

    def merge(self, other: Pairs) -> None:
        """Fold in the outcomes of another part of the tree."""
        for key, by_cond in other.outcomes.items():
            self.outcomes[key].update(by_cond)

    def uplifts(
        self, control: str, conditions: list[str], splits: dict[str, str] | None = None
    ) -> list[Uplift]:
        """Aggregate rows (scenario and split None), per-split rows, then per-scenario rows."""
        splits = splits or {}
        tallies: dict[tuple[str | None, str, str, str | None, str | None], _Tally] = defaultdict(_Tally)
        for (version, agent, scenario, _trial), by_cond in self.outcomes.items():
            ctrl = by_cond.get(control)
            if ctrl is None:
                continue
            for cond, outcome in by_cond.items():
                if cond == control:
                    continue
                tallies[(version, agent, cond, None, None)].add(scenario, outcome, ctrl)
                tallies[(version, agent, cond, scenario, None)].add(scenario, outcome, ctrl)
                split = splits.get(scenario)
                if split:
                    tallies[(version, agent, cond, None, split)].add(scenario, outcome, ctrl)
        order = {c: i for i, c in enumerate(conditions)}
        keys = sorted(
            tallies,
            key=lambda k: (
                k[3] is not None,
                k[4] is not None,
                k[3] or "",
                k[4] or "",
                k[0] or "",
                k[1],
                order.get(k[2], 1 << 30),
            ),
        )
        return [
            tallies[k]
            .uplift(scenario=k[3], version=k[0], agent=k[1], condition=k[2], control=control)
            .model_copy(update={"split": k[4]})
            for k in keys
        ]

    def drift(
        self, control: str, baseline: str, candidate: str, rates: dict[tuple[str | None, str], Rate]
    ) -> list[ControlDrift]:
        """The control's own change between versions, paired on (agent, scenario, trial)."""
        tallies: dict[str, _Tally] = defaultdict(_Tally)
        for (version, agent, scenario, trial), by_cond in self.outcomes.items():
            if version != baseline or control not in by_cond:
                continue
            other = self.outcomes.get((candidate, agent, scenario, trial), {}).get(control)
            if other is not None:
                tallies[agent].add(scenario, other, by_cond[control])
        agents = sorted({a for (v, a) in rates if v in (baseline, candidate)})
        out: list[ControlDrift] = []
        for agent in agents:
            base, cand = rates.get((baseline, agent), rate(0, 0)), rates.get((candidate, agent), rate(0, 0))
            t = tallies.get(agent, _Tally())
            n = t.a + t.b + t.c + t.d
            interval = newcombe_paired(PairTable(t.a, t.b, t.c, t.d)) if n else Interval(-1.0, 1.0)
            value = (cand.k / cand.n - base.k / base.n) if cand.n and base.n else None
            out.append(
                ControlDrift(
                    agent=agent,
                    baseline=base,
                    candidate=cand,
                    value=value,
                    pairs=n,
                    low=interval.low,
                    high=interval.high,
                )
            )
        return out


def version_deltas(uplifts: list[Uplift], baseline: str, candidate: str) -> list[VersionDelta]:
    """Each condition's uplift at the candidate minus at the baseline, aggregate and per scenario."""
    uplifts = [u for u in uplifts if u.split is None]
    index = {(u.version, u.agent, u.condition, u.scenario): u for u in uplifts}
    seen: list[tuple[str, str, str | None]] = []
    for u in uplifts:
        key = (u.agent, u.condition, u.scenario)
        if u.version in (baseline, candidate) and key not in seen:
            seen.append(key)
    out: list[VersionDelta] = []
    for agent, condition, scenario in seen:
        base = index.get((baseline, agent, condition, scenario))
        cand = index.get((candidate, agent, condition, scenario))
        note = ""
        value: float | None = None
        if base is None or cand is None:
            note = f"no paired runs at {baseline if base is None else candidate}"
        elif base.value is None or cand.value is None:
            note = "an uplift rests on no pairs"
        else:
            value = cand.value - base.value
        out.append(
            VersionDelta(
                scenario=scenario,
                agent=agent,
                condition=condition,
                baseline=base,
                candidate=cand,
                value=value,
                note=note,
            )
        )
    return out
