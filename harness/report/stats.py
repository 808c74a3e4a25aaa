"""Statistics of the report, stdlib only (scipy checks them in the tests, never at run time).

Methods, stated once so every number in a report can be traced to one:

* A rate is always a count: `Rate(k, n)`, printed `0.50 (1/2)`, with the Wilson 95% score interval
  (Wilson 1927), which stays inside [0, 1] and is honest at n = 2.
* Paired comparison: a treatment run and a control run pair when they share scenario, agent, trial
  (and version). Over the pairs, b = treatment passed and control failed, c = the reverse. The exact
  McNemar test is the two-sided binomial test of min(b, c) in b + c trials at p = 1/2.
  This exact test treats pairs as independent; it is a secondary column beside the uplift's own test.
* Uplift = treatment rate - control rate over the paired runs (the mean paired difference), with its
  95% interval and p-value from one scenario-clustered procedure: `harness.report.inference`.
* Power: the normal-approximation sample size for two proportions (Fleiss), a conservative plan for
  a paired design (pairing with positive correlation needs fewer runs, never more).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
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
