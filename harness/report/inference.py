"""Paired uplift with scenarios as clusters: one estimate, one variance, and from them both the 95%
interval and the p-value (stdlib only; scipy checks the t distribution in the tests).

The method, stated once:

* The data are pairs (a treatment run and the control run of the same scenario, agent, trial) with a
  difference d in {-1, 0, +1}; the uplift is the mean of d over the pairs (treatment rate minus control
  rate over the same runs).
* Runs of one scenario share its difficulty, so scenarios, not runs, are the independent units. The
  variance of the mean is the cluster-robust CR2 estimate (Bell and McCaffrey 2002) with scenarios as
  clusters, which for a mean is sum_g (S_g - n_g * mean)^2 / (1 - n_g / N) / N^2 (S_g the sum of d in
  scenario g, n_g its pairs, N all pairs); its reference distribution is Student's t with G - 1 degrees
  of freedom (G scenarios). With equal pairs per scenario this is exactly the one-sample t-test on the
  scenarios' mean differences.
* Floor: a scenario-clustered variance estimated from a handful of scenarios can come out near zero
  (every pair agreeing), which would give a zero-width interval at n = 2. The variance used is never
  below the paired variance with half a pseudo-pair added to each discordant cell (Agresti and Min
  2005: b + 1/2, c + 1/2 over N + 2 pairs), so a small sample always gets a wide, honest interval.
* One scenario (a per-scenario row, or a tree with one scenario): clustering cannot be estimated; the
  pairs are the units (t with N - 1 degrees of freedom) and the interval speaks for that scenario only.
  A single pair gives the whole range [-1, +1] and p = 1: n is too small to say anything.
* Interval = mean +/- t_{0.975, df} * SE, clipped to [-1, +1]; p = two-sided t tail of mean / SE. The
  interval excludes 0 exactly when p < 0.05: they cannot contradict each other.
* Multiplicity: Holm's step-down adjustment across the comparisons of one table (`holm`).

tests/report/test_report_inference.py simulates thousands of matrices with scenario-level random
effects on the control rate and on the uplift and checks coverage and the false-positive rate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

ALPHA = 0.05
"""Two-sided level of every interval (95%) and of the 'significant' / 'survives correction' marks."""


@dataclass(frozen=True, slots=True)
class ClusterSums:
    """One scenario's pairs: how many, and how many went each way (d = +1 / d = -1)."""

    n: int
    up: int
    down: int


@dataclass(frozen=True, slots=True)
class Estimate:
    """A paired uplift with its interval and test, both from the same SE and t distribution."""

    value: float
    low: float
    high: float
    p: float
    se: float
    df: int
    clusters: int
    units: str
    """What the t distribution counts: 'scenarios', 'pairs' (one scenario), or 'none' (one pair)."""


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_two_sided_p(t: float, df: int) -> float:
    """P(|T| >= |t|) for Student's t with df degrees of freedom."""
    if math.isinf(t):
        return 0.0
    return min(1.0, betainc(df / 2.0, 0.5, df / (df + t * t)))


@lru_cache(maxsize=256)
def t_quantile(df: int, alpha: float = ALPHA) -> float:
    """The t such that P(|T| >= t) = alpha (bisection on the tail; exact to 1e-12)."""
    lo, hi = 0.0, 1.0
    while t_two_sided_p(hi, df) > alpha:
        hi *= 2.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if t_two_sided_p(mid, df) > alpha:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12:
            break
    return (lo + hi) / 2.0


def _floor_variance(up: int, down: int, n: int) -> float:
    """Agresti-Min: the paired variance of the mean with half a pseudo-pair in each discordant cell."""
    b, c, m = up + 0.5, down + 0.5, n + 2.0
    return ((b + c) - (b - c) ** 2 / m) / (m * m)


def paired_uplift(clusters: Sequence[ClusterSums], *, alpha: float = ALPHA) -> Estimate | None:
    """The clustered paired uplift of the module docstring; None without pairs."""
    groups = [g for g in clusters if g.n > 0]
    n = sum(g.n for g in groups)
    if n == 0:
        return None
    up, down = sum(g.up for g in groups), sum(g.down for g in groups)
    mean = (up - down) / n
    floor = _floor_variance(up, down, n)
    if len(groups) >= 2:
        cr2 = sum((g.up - g.down - g.n * mean) ** 2 / (1.0 - g.n / n) for g in groups) / (n * n)
        variance, df, units = max(cr2, floor), len(groups) - 1, "scenarios"
    elif n >= 2:
        iid = ((up + down) - n * mean * mean) / (n - 1) / n
        variance, df, units = max(iid, floor), n - 1, "pairs"
    else:
        return Estimate(mean, -1.0, 1.0, 1.0, math.inf, 0, len(groups), "none")
    se = math.sqrt(variance)
    half = t_quantile(df, alpha) * se
    return Estimate(
        value=mean,
        low=max(-1.0, mean - half),
        high=min(1.0, mean + half),
        p=t_two_sided_p(mean / se, df),
        se=se,
        df=df,
        clusters=len(groups),
        units=units,
    )


def detectable(est: Estimate, *, power: float = 0.8, alpha: float = ALPHA) -> float | None:
    """Smallest uplift this design detects at `power` (two-sided alpha): (t_{1-alpha/2} + t_power) * SE,
    with the estimate's own SE and df, so it shares the test's clustering; None when n is too small."""
    if est.df < 1:
        return None
    return min(1.0, (t_quantile(est.df, alpha) + t_quantile(est.df, 2 * (1 - power))) * est.se)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the input order (monotone, capped at 1)."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted = [1.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted
