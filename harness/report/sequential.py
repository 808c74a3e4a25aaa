"""Sequential decisions: after each round of trials, which comparisons are decided, with the chance of
declaring an uplift that is not there held at alpha however many rounds are looked at (stdlib only;
tests/report/test_report_sequential.py checks it against scipy and by simulation).

The method, stated once:

* A matrix run `--until decided` runs in rounds: round k is trial k of every job still needed (all
  cells of an open comparison, paired with the control, balanced). After each round, every open
  comparison is looked at. The planned maximum is K rounds (the matrix's trials).
* Two levels, the report's two tables:
  - **a comparison** (agent x treatment against the control, the scenarios pooled): the report's own
    estimate (`inference.paired_uplift`: the mean paired difference, CR2 variance with scenarios as
    clusters, Student's t with G - 1 df) at every round, against a **group-sequential boundary**: the
    error is spent over the K looks by the Lan-DeMets Pocock-type function alpha * ln(1 + (e - 1) t),
    t = k / K, and the nominal level of each look is computed exactly for the canonical joint
    distribution of a statistic observed K times (`nominal_levels`, Armitage-McPherson-Rowe recursion).
    Runs of one scenario share its difficulty, which only raises the correlation between looks; the
    boundary is then conservative, and the simulation checks it. The interval at look k, at its nominal
    level, is a repeated confidence interval: all of them cover the uplift at once with probability
    1 - alpha. Needs two scenarios or more.
  - **one scenario** of a comparison: its pairs are independent draws of that scenario, so an exact
    test martingale decides it: the Krichevsky-Trofimov e-value of the discordant pairs' signs,
    E = B(b + 1/2, c + 1/2) / B(1/2, 1/2) * 2^(b + c) (b pairs only the treatment passed, c only the
    control). Under no uplift E is a nonnegative martingale with mean 1, so by Ville's inequality it
    ever reaches 1/a with probability at most a, whenever the matrix stops.
* Decided: the interval excludes 0 (an effect, either sign), or, for a comparison, the interval lies
  below the smallest uplift that matters (`min_uplift`; 0 turns this off). A decided scenario stops
  running; a decided comparison stops all of its scenarios. Decisions are never revisited.
* Multiplicity: alpha is split in two halves, one per level (all of it to the scenario level when no
  comparison has two scenarios), and Bonferroni within each level: every comparison gets
  alpha/2 / (comparisons), every scenario comparison an e-value threshold of
  (scenario comparisons) / (alpha/2). So the chance that a sequential matrix declares any effect that
  is not there is at most alpha.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from harness.artifacts import rounds
from harness.artifacts.rounds import Comparisons, Seen
from harness.report.inference import ALPHA, ClusterSums, paired_uplift

METHOD = (
    "group-sequential: per comparison, the report's clustered uplift against Lan-DeMets Pocock-type "
    "alpha spending over the planned rounds; per scenario, the Krichevsky-Trofimov e-value of the "
    "discordant pairs (Ville's inequality); alpha split between the two levels, Bonferroni within each"
)
"""One line naming the method, for the record and the report."""

Status = Literal["effect", "below", "open"]

Key = tuple[str | None, str, str]
"""(version, agent, treatment condition): one comparison against the control."""

Differences = Mapping[int, int]
"""trial -> paired difference (+1 only the treatment passed, -1 only the control, 0 both or neither)."""


def spent(t: float, alpha: float) -> float:
    """Error spent by information fraction t: the Lan-DeMets Pocock-type function."""
    return alpha * math.log1p((math.e - 1.0) * min(1.0, max(0.0, t)))


def _upper(x: float) -> float:
    """P(Z > x) for a standard normal."""
    return 0.5 * math.erfc(x / math.sqrt(2.0))


def _simpson(low: float, high: float, points: int) -> tuple[list[float], list[float]]:
    """Nodes and Simpson weights on [low, high] (points odd)."""
    h = (high - low) / (points - 1)
    nodes = [low + i * h for i in range(points)]
    weights = [h / 3.0 * (1 if i in (0, points - 1) else 4 if i % 2 else 2) for i in range(points)]
    return nodes, weights


@lru_cache(maxsize=128)
def nominal_levels(rounds: int, alpha: float, points: int = 161) -> tuple[float, ...]:
    """The two-sided nominal level of each of `rounds` equally spaced looks that together spend alpha.

    S_k, the sum of k independent standard normals, is observed at k = 1..rounds; the boundary b_k on
    |S_k| is chosen so that P(first crossing at look k) = spent(k/K) - spent((k-1)/K), computing the
    density of S_k on the continuation region numerically (Simpson, `points` nodes). The nominal level
    of look k is P(|Z| >= b_k / sqrt(k)).
    """
    levels: list[float] = []
    nodes: list[float] = []
    mass: list[float] = []
    """Density of S_k times the Simpson weight at each node of the continuation region."""
    for k in range(1, rounds + 1):
        target = spent(k / rounds, alpha) - spent((k - 1) / rounds, alpha)
        bound = _z_upper(target / 2.0) if k == 1 else _boundary(nodes, mass, target, k)
        levels.append(2.0 * _upper(bound / math.sqrt(k)))
        new_nodes, weights = _simpson(-bound, bound, points)
        density = [_spread(nodes, mass, s) if k > 1 else _NORM * math.exp(-s * s / 2.0) for s in new_nodes]
        nodes, mass = new_nodes, [w * f for w, f in zip(weights, density, strict=True)]
    return tuple(levels)


_NORM = 1.0 / math.sqrt(2.0 * math.pi)


def _spread(nodes: list[float], mass: list[float], s: float) -> float:
    """Density of S_(k+1) at s: S_k (still going) plus one standard normal step."""
    return sum(m * _NORM * math.exp(-((s - u) ** 2) / 2.0) for m, u in zip(mass, nodes, strict=True))


def _boundary(nodes: list[float], mass: list[float], target: float, k: int) -> float:
    """b such that P(S_(k-1) still going, |S_k| >= b) = target (bisection; crossing falls with b)."""

    def crossing(b: float) -> float:
        return sum(m * (_upper(b - u) + _upper(b + u)) for m, u in zip(mass, nodes, strict=True))

    lo, hi = 0.0, 8.0 * math.sqrt(k) + 10.0
    for _ in range(60):
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if crossing(mid) > target else (lo, mid)
    return (lo + hi) / 2.0


def _z_upper(p: float) -> float:
    """x with P(Z > x) = p (bisection; p in (0, 1/2])."""
    lo, hi = 0.0, 40.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if _upper(mid) > p else (lo, mid)
    return (lo + hi) / 2.0


def e_value(up: int, down: int) -> float:
    """Krichevsky-Trofimov e-value against 'no uplift' from the discordant pairs' signs."""
    log_e = (
        math.lgamma(up + 0.5)
        + math.lgamma(down + 0.5)
        - math.lgamma(up + down + 1.0)
        - 2.0 * math.lgamma(0.5)
        + (up + down) * math.log(2.0)
    )
    return math.exp(min(log_e, 700.0))


@dataclass(frozen=True)
class Design:
    """What is decided and at which levels: fixed by the selected jobs before any trial runs."""

    rounds: int
    """Planned maximum number of rounds K (the matrix's trials)."""
    comparisons: int
    """Comparisons with two scenarios or more (tested pooled)."""
    scenario_comparisons: int
    """(comparison, scenario) pairs, each tested on its own."""
    alpha: float = ALPHA
    min_uplift: float = 0.0
    """The smallest uplift that matters: a comparison whose interval lies below it is decided."""

    @property
    def pooled_alpha(self) -> float:
        """Error of one pooled comparison over all its looks."""
        return self.alpha / 2.0 / self.comparisons if self.comparisons else 0.0

    @property
    def threshold(self) -> float:
        """E-value a scenario comparison must reach."""
        share = self.alpha / 2.0 if self.comparisons else self.alpha
        return max(1, self.scenario_comparisons) / share

    def levels(self) -> tuple[float, ...]:
        """Nominal level of each look of a pooled comparison."""
        return nominal_levels(self.rounds, self.pooled_alpha) if self.comparisons else ()


@dataclass(frozen=True)
class Verdict:
    """Where one comparison (scenario None) or one of its scenarios stands."""

    key: Key
    scenario: str | None
    status: Status
    round: int | None
    """The round that decided it; None while open."""
    pairs: int
    value: float | None
    low: float
    high: float
    p: float | None = None
    level: float | None = None
    """Nominal level of the deciding (or last) look: the interval is at 1 - level."""
    e_value: float | None = None


def _scenario_look(key: Key, scenario: str, diffs: Sequence[int], k: int, design: Design) -> Verdict:
    up, down = diffs.count(1), diffs.count(-1)
    e = e_value(up, down)
    n = len(diffs)
    decided = e >= design.threshold and up != down
    return Verdict(
        key=key,
        scenario=scenario,
        status="effect" if decided else "open",
        round=k if decided else None,
        pairs=n,
        value=(up - down) / n if n else None,
        low=-1.0,
        high=1.0,
        e_value=e,
    )


def _pooled_look(key: Key, clusters: list[ClusterSums], k: int, design: Design) -> Verdict:
    level = design.levels()[k - 1]
    est = paired_uplift(clusters, alpha=level)
    if est is None or est.df == 0:
        return Verdict(key, None, "open", None, sum(c.n for c in clusters), None, -1.0, 1.0, None, level)
    status: Status = "open"
    if est.low > 0.0 or est.high < 0.0:
        status = "effect"
    elif design.min_uplift > 0.0 and est.high < design.min_uplift:
        status = "below"
    pairs = sum(c.n for c in clusters)
    return Verdict(
        key, None, status, k if status != "open" else None, pairs, est.value, est.low, est.high, est.p, level
    )


def replay(
    data: Mapping[Key, Mapping[str, Differences]], design: Design, looks: int
) -> dict[tuple[Key, str | None], Verdict]:
    """Every verdict after `looks` rounds, replaying the rounds from the start (resumable, deterministic).

    `data[key][scenario]` holds the paired differences by trial of every scenario the comparison
    plans; a pair missing from a round (a run that failed to run) is simply absent. A scenario stopped
    at round r contributes its trials up to r only, to its own test and to its comparison's.
    """
    verdicts: dict[tuple[Key, str | None], Verdict] = {}
    stopped: dict[tuple[Key, str], int] = {}
    for k in range(1, min(looks, design.rounds) + 1):
        for key, scenarios in data.items():
            if verdicts.get((key, None), _OPEN).status != "open":
                continue
            for scenario, diffs in scenarios.items():
                if (key, scenario) in stopped:
                    continue
                seen = [d for t, d in sorted(diffs.items()) if t <= k]
                verdict = _scenario_look(key, scenario, seen, k, design)
                verdicts[(key, scenario)] = verdict
                if verdict.status != "open":
                    stopped[(key, scenario)] = k
            if design.comparisons and len(scenarios) >= 2:
                clusters = []
                for scenario, diffs in scenarios.items():
                    last = stopped.get((key, scenario), k)
                    seen = [d for t, d in diffs.items() if t <= last]
                    clusters.append(ClusterSums(len(seen), seen.count(1), seen.count(-1)))
                verdict = _pooled_look(key, clusters, k, design)
                verdicts[(key, None)] = verdict
                if verdict.status != "open":
                    for scenario in scenarios:
                        stopped.setdefault((key, scenario), k)
    return verdicts


_OPEN = Verdict(("", "", ""), None, "open", None, 0, None, -1.0, 1.0)


def design(comps: Comparisons, rounds_planned: int, *, min_uplift: float = 0.0) -> Design:
    """The design of a plan's comparisons (fixed before any trial runs)."""
    return Design(
        rounds=rounds_planned,
        comparisons=sum(1 for _, scenarios in comps.values() if len(scenarios) >= 2),
        scenario_comparisons=sum(len(scenarios) for _, scenarios in comps.values()),
        min_uplift=min_uplift,
    )


def judge(seen: Sequence[Seen], looks: int, comps: Comparisons, plan: Design) -> list[rounds.Verdict]:
    """Every verdict after `looks` rounds of the runs seen, as rounds.json records them.

    A pair is a graded, valid treatment run and the control run of the same version, agent,
    scenario and trial (the report's pairing); sanity agents are in no comparison.
    """
    passed = {run.key(): run.passed for run in seen if run.graded}
    data: dict[Key, dict[str, dict[int, int]]] = {}
    for key, (control, scenarios) in comps.items():
        version, agent, cell = key
        data[key] = {}
        for scenario in scenarios:
            diffs: dict[int, int] = {}
            for (v, a, c, s, trial), won in passed.items():
                other = passed.get((v, a, control, s, trial))
                if (v, a, c, s) == (version, agent, cell, scenario) and other is not None:
                    diffs[trial] = int(won) - int(other)
            data[key][scenario] = diffs
    found = replay(data, plan, looks)
    return [
        rounds.Verdict(
            version=key[0],
            agent=key[1],
            condition=key[2],
            control=comps[key][0],
            scenario=scenario,
            status=v.status,
            round=v.round,
            pairs=v.pairs,
            value=v.value,
            low=v.low,
            high=v.high,
            p=v.p,
            level=v.level,
            e_value=v.e_value,
        )
        for (key, scenario), v in sorted(found.items(), key=lambda item: str(item[0]))
    ]


def is_open(verdicts: Mapping[tuple[Key, str | None], Verdict], key: Key, scenario: str) -> bool:
    """Whether a scenario of a comparison still needs trials: neither it nor its comparison is decided."""
    return all(verdicts.get((key, s), _OPEN).status == "open" for s in (scenario, None))
