"""Statistics of the report, stdlib only (scipy checks them in the tests, never at run time).

Methods, stated once so every number in a report can be traced to one:

* A rate is always a count: `Rate(k, n)`, printed `0.50 (1/2)`, with the Wilson 95% score interval
  (Wilson 1927), which stays inside [0, 1] and is honest at n = 2.
* Paired comparison: a treatment run and a control run pair when they share scenario, agent, trial
  (and version). Over the pairs, b = treatment passed and control failed, c = the reverse. The exact
  McNemar test is the two-sided binomial test of min(b, c) in b + c trials at p = 1/2.
* Uplift = treatment rate - control rate over the paired runs (so it is exactly the mean paired
  difference). Its 95% interval is Newcombe's hybrid score interval for paired proportions
  (Newcombe 1998, method 10), which accounts for the pairing through the phi correlation of the 2x2
  table and stays sane at 0/n and n/n. Scenarios are clusters: runs of one scenario share its
  difficulty, so they are not independent. We estimate the design effect
  deff = V_cluster / V_iid of the mean paired difference, where V_cluster is the cluster-robust
  (CR1, G/(G-1)) variance with scenarios as clusters and V_iid the ordinary variance of the mean, and
  compute the Newcombe interval on the counts divided by max(1, deff) (Kish's effective sample
  size). Clustering therefore only ever widens the interval. With fewer than two scenarios, or no
  variance at all, deff is 1 and the report says clustering could not be estimated.
* Power: the normal-approximation sample size for two proportions (Fleiss), a conservative plan for
  a paired design (pairing with positive correlation needs fewer runs, never more).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from statistics import NormalDist

Z95 = NormalDist().inv_cdf(0.975)
"""Two-sided 95% normal quantile, 1.959963984540054."""


class Interval(tuple[float, float]):
    """A closed interval (low, high)."""

    __slots__ = ()

    def __new__(cls, low: float, high: float) -> Interval:
        return super().__new__(cls, (low, high))

    @property
    def low(self) -> float:
        return self[0]

    @property
    def high(self) -> float:
        return self[1]


def wilson(k: float, n: float, *, z: float = Z95) -> Interval:
    """Wilson score interval for k successes in n trials; (0, 1) when n is 0."""
    if n <= 0:
        return Interval(0.0, 1.0)
    p = k / n
    z2 = z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(max(p * (1 - p) / n + z2 / (4 * n * n), 0.0)) / denom
    low = 0.0 if k <= 0 else max(0.0, centre - half)
    high = 1.0 if k >= n else min(1.0, centre + half)
    return Interval(low, high)


def _log_binom_pmf(k: int, n: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) - n * math.log(2.0)


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for discordant counts b and c (1.0 when there are none)."""
    n = b + c
    if n == 0:
        return 1.0
    k = min(b, c)
    if n <= 1000:
        tail = sum(math.comb(n, i) for i in range(k + 1)) / 2.0**n
    else:
        tail = sum(math.exp(_log_binom_pmf(i, n)) for i in range(k + 1))
    return min(1.0, 2.0 * tail)


@dataclass(frozen=True, slots=True)
class PairTable:
    """The 2x2 table of paired binary outcomes: a both pass, b only treatment, c only control, d neither."""

    a: float
    b: float
    c: float
    d: float

    @property
    def n(self) -> float:
        return self.a + self.b + self.c + self.d

    def scaled(self, factor: float) -> PairTable:
        """The table with every count divided by factor (an effective sample size)."""
        return PairTable(self.a / factor, self.b / factor, self.c / factor, self.d / factor)


def newcombe_paired(t: PairTable, *, z: float = Z95) -> Interval:
    """Newcombe's method-10 interval for p_treatment - p_control on paired data."""
    n = t.n
    if n <= 0:
        return Interval(-1.0, 1.0)
    p1 = (t.a + t.b) / n
    p2 = (t.a + t.c) / n
    l1, u1 = wilson(t.a + t.b, n, z=z)
    l2, u2 = wilson(t.a + t.c, n, z=z)
    denom = (t.a + t.b) * (t.c + t.d) * (t.a + t.c) * (t.b + t.d)
    phi = (t.a * t.d - t.b * t.c) / math.sqrt(denom) if denom > 0 else 0.0
    delta = p1 - p2
    low = delta - math.sqrt(max((p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2, 0.0))
    high = delta + math.sqrt(max((u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2, 0.0))
    return Interval(max(-1.0, low), min(1.0, high))


@dataclass(frozen=True, slots=True)
class ClusterSums:
    """One cluster's paired differences: the number of pairs, and sums of d and d squared."""

    n: int
    total: float
    total_sq: float


def design_effect(clusters: Sequence[ClusterSums]) -> float | None:
    """Cluster-robust over iid variance of the mean paired difference; None when not estimable."""
    groups = [g for g in clusters if g.n > 0]
    n = sum(g.n for g in groups)
    if len(groups) < 2 or n < 2:
        return None
    mean = sum(g.total for g in groups) / n
    ss = sum(g.total_sq for g in groups) - n * mean * mean
    v_iid = ss / (n - 1) / n
    if v_iid <= 1e-15:
        return None
    g_count = len(groups)
    v_cluster = g_count / (g_count - 1) * sum((g.total - g.n * mean) ** 2 for g in groups) / (n * n)
    return v_cluster / v_iid


def uplift_interval(t: PairTable, clusters: Sequence[ClusterSums]) -> tuple[Interval, float | None]:
    """Paired uplift interval widened by the scenario design effect; returns (interval, deff)."""
    deff = design_effect(clusters)
    factor = max(1.0, deff) if deff is not None else 1.0
    return newcombe_paired(t.scaled(factor)), deff


@dataclass(slots=True)
class Moments:
    """Streaming n / mean / stddev / min / max (Welford), one pass, constant memory."""

    n: int = 0
    mean: float = 0.0
    m2: float = 0.0
    low: float = math.inf
    high: float = -math.inf

    def add(self, x: float) -> None:
        self.n += 1
        delta = x - self.mean
        self.mean += delta / self.n
        self.m2 += delta * (x - self.mean)
        self.low = min(self.low, x)
        self.high = max(self.high, x)

    def merge(self, other: Moments) -> None:
        """Fold another accumulator in (Chan et al.'s parallel update), as if its values were added here."""
        if other.n == 0:
            return
        if self.n == 0:
            self.n, self.mean, self.m2, self.low, self.high = (
                other.n,
                other.mean,
                other.m2,
                other.low,
                other.high,
            )
            return
        n = self.n + other.n
        delta = other.mean - self.mean
        self.mean += delta * other.n / n
        self.m2 += other.m2 + delta * delta * self.n * other.n / n
        self.n = n
        self.low = min(self.low, other.low)
        self.high = max(self.high, other.high)

    @property
    def stddev(self) -> float:
        """Sample standard deviation (n - 1); 0 for a single value."""
        return math.sqrt(self.m2 / (self.n - 1)) if self.n > 1 else 0.0

    @property
    def total(self) -> float:
        return self.mean * self.n


def sample_variance(values: Iterable[float]) -> float:
    """Sample variance of values (0 for fewer than two)."""
    m = Moments()
    for v in values:
        m.add(v)
    return m.stddev**2


def runs_needed(p_control: float, uplift: float, *, power: float = 0.8, alpha: float = 0.05) -> int | None:
    """Graded runs per condition to detect p_control -> p_control + uplift (two-sided); None if impossible."""
    p1, p2 = p_control, p_control + uplift
    if uplift == 0 or not (0.0 <= p1 <= 1.0 and 0.0 <= p2 <= 1.0):
        return None
    za = NormalDist().inv_cdf(1 - alpha / 2)
    zb = NormalDist().inv_cdf(power)
    pbar = (p1 + p2) / 2
    root = za * math.sqrt(2 * pbar * (1 - pbar)) + zb * math.sqrt(p1 * (1 - p1) + p2 * (1 - p2))
    return max(1, math.ceil(root * root / (uplift * uplift)))


def detectable_uplift(p_control: float, n: int, *, power: float = 0.8, alpha: float = 0.05) -> float | None:
    """Smallest positive uplift that n runs per arm detect at power; None when even 1 - p_control is not."""
    if n <= 0 or p_control >= 1.0:
        return None
    top = 1.0 - p_control
    need = runs_needed(p_control, top, power=power, alpha=alpha)
    if need is None or need > n:
        return None
    lo, hi = 0.0, top
    for _ in range(50):
        mid = (lo + hi) / 2
        need = runs_needed(p_control, mid, power=power, alpha=alpha) if mid > 0 else None
        if need is not None and need <= n:
            hi = mid
        else:
            lo = mid
    return hi
