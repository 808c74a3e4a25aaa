"""Paired uplift over the control, version deltas and control drift (methods: see stats.py)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from harness.report.accumulate import rate
from harness.report.inference import ALPHA, ClusterSums, Estimate, detectable, holm, paired_uplift
from harness.report.stats import mcnemar_exact
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
    clusters: dict[str, list[int]] = field(default_factory=dict)
    """scenario -> [pairs, treatment-only passes, control-only passes]."""

    def add(self, scenario: str, t: Outcome, c: Outcome) -> None:
        if t[0] and c[0]:
            self.a += 1
        elif t[0]:
            self.b += 1
        elif c[0]:
            self.c += 1
        else:
            self.d += 1
        sums = self.clusters.setdefault(scenario, [0, 0, 0])
        sums[0] += 1
        sums[1] += t[0] and not c[0]
        sums[2] += c[0] and not t[0]
        if t[1] and c[1] and t[2] is not None and c[2] is not None:
            self.token_pairs += 1
            self.tokens_t += t[2]
            self.tokens_c += c[2]

    def merge(self, other: _Tally) -> None:
        """Add another tally's pairs (of other scenarios, or more of the same)."""
        self.a += other.a
        self.b += other.b
        self.c += other.c
        self.d += other.d
        self.token_pairs += other.token_pairs
        self.tokens_t += other.tokens_t
        self.tokens_c += other.tokens_c
        for scenario, (n, b, c) in other.clusters.items():
            sums = self.clusters.setdefault(scenario, [0, 0, 0])
            sums[0] += n
            sums[1] += b
            sums[2] += c

    def estimate(self) -> Estimate | None:
        """The clustered paired uplift (harness.report.inference) over these pairs."""
        return paired_uplift([ClusterSums(*sums) for sums in self.clusters.values()])

    def uplift(
        self, *, scenario: str | None, version: str | None, agent: str, condition: str, control: str
    ) -> Uplift:
        n = self.a + self.b + self.c + self.d
        est = self.estimate()
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
            value=est.value if est else None,
            low=est.low if est else -1.0,
            high=est.high if est else 1.0,
            p_value=est.p if est else 1.0,
            df=est.df if est else 0,
            units=est.units if est else "none",
            both=self.a,
            only_treatment=self.b,
            only_control=self.c,
            neither=self.d,
            mcnemar_p=mcnemar_exact(self.b, self.c),
            clusters=len(self.clusters),
            token_pairs=self.token_pairs,
            tokens_treatment=self.tokens_t / self.token_pairs if self.token_pairs else None,
            tokens_control=self.tokens_c / self.token_pairs if self.token_pairs else None,
            detectable=_within_headroom(detectable(est) if est else None, control_rate),
        )


def _within_headroom(found: float | None, control: Rate) -> float | None:
    """A detectable uplift the control's headroom (1 - its rate) leaves room for, else None."""
    room = 1.0 - control.k / control.n if control.n else 0.0
    return found if found is not None and found <= room else None


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
        self,
        control: str,
        conditions: list[str],
        splits: dict[str, str] | None = None,
        *,
        skip: set[str] | None = None,
    ) -> list[Uplift]:
        """Aggregate rows (scenario and split None), per-split rows, then per-scenario rows; agents in
        `skip` (sanity bounds) get none."""
        splits = splits or {}
        skip = skip or set()
        # Each pair is tallied once, in its scenario's row; the aggregate and split rows are sums of
        # those, merged in the order the scenarios were met (the order a pair-by-pair tally sees them).
        per_scenario: dict[tuple[str | None, str, str, str], _Tally] = {}
        for (version, agent, scenario, _trial), by_cond in self.outcomes.items():
            ctrl = by_cond.get(control)
            if ctrl is None or agent in skip:
                continue
            for cond, outcome in by_cond.items():
                if cond == control:
                    continue
                tally = per_scenario.get((version, agent, cond, scenario))
                if tally is None:
                    tally = per_scenario[(version, agent, cond, scenario)] = _Tally()
                tally.add(scenario, outcome, ctrl)
        tallies: dict[tuple[str | None, str, str, str | None, str | None], _Tally] = defaultdict(_Tally)
        for (version, agent, cond, scenario), tally in per_scenario.items():
            tallies[(version, agent, cond, scenario, None)] = tally
            tallies[(version, agent, cond, None, None)].merge(tally)
            split = splits.get(scenario)
            if split:
                tallies[(version, agent, cond, None, split)].merge(tally)
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
        rows = [
            tallies[k]
            .uplift(scenario=k[3], version=k[0], agent=k[1], condition=k[2], control=control)
            .model_copy(update={"split": k[4]})
            for k in keys
        ]
        return corrected(rows)

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
            est = t.estimate()
            value = (cand.k / cand.n - base.k / base.n) if cand.n and base.n else None
            out.append(
                ControlDrift(
                    agent=agent,
                    baseline=base,
                    candidate=cand,
                    value=value,
                    pairs=n,
                    low=est.low if est else -1.0,
                    high=est.high if est else 1.0,
                    p_value=est.p if est else 1.0,
                )
            )
        return out


def table_of(u: Uplift) -> str:
    """Which report table a row belongs to: its family for the multiplicity correction."""
    return "scenario" if u.scenario is not None else "split" if u.split is not None else "aggregate"


def corrected(rows: list[Uplift]) -> list[Uplift]:
    """Rows with Holm-adjusted p-values, each table (aggregate, per split, per scenario) one family."""
    out = list(rows)
    for table in ("aggregate", "split", "scenario"):
        index = [i for i, u in enumerate(rows) if table_of(u) == table and u.pairs]
        for i, p in zip(index, holm([rows[i].p_value for i in index]), strict=True):
            out[i] = rows[i].model_copy(
                update={"p_adjusted": p, "survives": p < ALPHA, "comparisons": len(index)}
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
