"""The clustered paired uplift: the t distribution against scipy, hand-computed cases, and a simulation
of thousands of matrices with scenario-level heterogeneity checking coverage and the false-positive rate."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest
from scipy import special, stats

from harness.report.inference import (
    ALPHA,
    ClusterSums,
    Estimate,
    betainc,
    detectable,
    holm,
    paired_uplift,
    t_quantile,
    t_two_sided_p,
)


@pytest.mark.parametrize("df", [1, 2, 3, 4, 7, 19, 60, 500])
def test_t_distribution_matches_scipy(df: int) -> None:
    for t in (0.0, 0.3, 1.0, 1.96, 2.5, 4.0, 12.7, 40.0):
        assert t_two_sided_p(t, df) == pytest.approx(2 * stats.t.sf(t, df), rel=1e-9, abs=1e-15)
    assert t_quantile(df) == pytest.approx(stats.t.ppf(1 - ALPHA / 2, df), rel=1e-9)


def test_betainc_matches_scipy() -> None:
    for a, b in ((0.5, 0.5), (2.0, 0.5), (10.0, 0.5), (3.0, 7.0)):
        for x in (0.0, 0.01, 0.2, 0.5, 0.9, 0.999, 1.0):
            assert betainc(a, b, x) == pytest.approx(special.betainc(a, b, x), rel=1e-10, abs=1e-15)


def test_detectable_uses_the_tests_own_se_and_df() -> None:
    est = paired_uplift([ClusterSums(4, 2, 0), ClusterSums(4, 2, 0), ClusterSums(4, 1, 0)])
    assert est is not None
    found = detectable(est)
    assert found == pytest.approx((stats.t.ppf(0.975, 2) + stats.t.ppf(0.8, 2)) * est.se)
    many = paired_uplift([ClusterSums(4, 2, 0)] * 20 + [ClusterSums(4, 1, 0)] * 10)
    assert many is not None and detectable(many) < found  # type: ignore[operator]
    one = paired_uplift([ClusterSums(1, 1, 0)])
    assert one is not None and detectable(one) is None


def test_holm_hand_computed() -> None:
    # Sorted 0.01, 0.02, 0.03, 0.5 -> 4*0.01, 3*0.02, max(0.06, 2*0.03), max(0.06, 0.5).
    assert holm([0.03, 0.01, 0.5, 0.02]) == pytest.approx([0.06, 0.04, 0.5, 0.06])
    assert holm([0.4, 0.6]) == pytest.approx([0.8, 0.8])
    assert holm([]) == []


def test_cr2_is_the_t_test_on_scenario_means() -> None:
    # Equal pairs per scenario, clustered variance above the floor: the one-sample t-test of the
    # scenarios' mean differences, interval and p alike.
    clusters = [ClusterSums(4, 4, 0), ClusterSums(4, 3, 0), ClusterSums(4, 0, 1), ClusterSums(4, 2, 0)]
    means = [1.0, 0.75, -0.25, 0.5]
    est = paired_uplift(clusters)
    assert est is not None and est.units == "scenarios" and est.df == 3
    ref = stats.ttest_1samp(means, 0.0)
    assert est.value == pytest.approx(np.mean(means))
    assert est.p == pytest.approx(ref.pvalue, rel=1e-9)
    ci = ref.confidence_interval(0.95)
    assert (est.low, est.high) == pytest.approx((ci.low, min(1.0, ci.high)), rel=1e-9)


def test_unequal_scenarios_hand_computed() -> None:
    # Scenario A: 2 pairs, both +1; scenario B: 6 pairs, one +1. N = 8, mean 3/8.
    # CR2 = [(2 - 2*3/8)^2 / (1 - 2/8) + (1 - 6*3/8)^2 / (1 - 6/8)] / 64 = (25/12 + 25/4) / 64.
    est = paired_uplift([ClusterSums(2, 2, 0), ClusterSums(6, 1, 0)])
    assert est is not None
    assert est.value == pytest.approx(3 / 8)
    assert est.se == pytest.approx(math.sqrt((25 / 12 + 25 / 4) / 64))
    assert est.df == 1 and est.high == 1.0


def test_the_floor_keeps_small_samples_wide() -> None:
    for up, down in ((2, 0), (0, 0), (0, 2)):
        est = paired_uplift([ClusterSums(2, up, down)])
        assert est is not None and est.units == "pairs" and est.df == 1
        assert est.high - est.low >= 1.0, (up, down, est)
        assert est.p > ALPHA
    # Every scenario agreeing exactly (clustered variance 0) still gives an interval of real width.
    est = paired_uplift([ClusterSums(3, 0, 0) for _ in range(4)])
    assert est is not None and est.value == 0.0 and est.high - est.low > 0.3
    one = paired_uplift([ClusterSums(1, 1, 0)])
    assert one == Estimate(1.0, -1.0, 1.0, 1.0, math.inf, 0, 1, "none")
    assert paired_uplift([]) is None and paired_uplift([ClusterSums(0, 0, 0)]) is None


def test_interval_and_test_always_agree() -> None:
    rng = np.random.default_rng(7)
    for _ in range(500):
        g = int(rng.integers(1, 8))
        clusters = []
        for _ in range(g):
            n = int(rng.integers(1, 9))
            up = int(rng.integers(0, n + 1))
            clusters.append(ClusterSums(n, up, int(rng.integers(0, n - up + 1))))
        est = paired_uplift(clusters)
        assert est is not None
        if est.df:
            assert (est.p < ALPHA) == (est.low > 0 or est.high < 0), (clusters, est)
        assert -1.0 <= est.low <= est.value <= est.high <= 1.0


# --- simulation -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Result:
    coverage: float
    rejections: float
    matrices: int


def _expit(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _true_uplift(mu: np.ndarray, sx: np.ndarray, delta: np.ndarray, sd: np.ndarray) -> np.ndarray:
    """E[expit(x + d/2) - expit(x - d/2)], x ~ N(mu, sx^2), d ~ N(delta, sd^2): Gauss-Hermite, 40 x 40."""
    z, w = np.polynomial.hermite_e.hermegauss(40)
    w = w / w.sum()
    x = mu[:, None, None] + sx[:, None, None] * z[None, :, None]
    d = delta[:, None, None] + sd[:, None, None] * z[None, None, :]
    vals = _expit(x + d / 2) - _expit(x - d / 2)
    out: np.ndarray = np.einsum("mij,i,j->m", vals, w, w)
    return out


def simulate(rng: np.random.Generator, *, scenarios: int, trials: int, matrices: int, null: bool) -> Result:
    """Matrices of paired trials: per scenario a random control logit and a random uplift on the logit
    scale, per trial a random effect both sides of the pair share, and 10% of pairs lost (unequal
    scenarios). Under the null the uplift's logit is symmetric about 0, so the true uplift is exactly 0
    while scenarios still disagree about it."""
    m, g, t = matrices, scenarios, trials
    mu = rng.choice([-1.5, 0.0, 1.5], m)
    sa = rng.choice([1.0, 2.0], m)
    su = 0.5
    sd = rng.choice([0.5, 1.0], m)
    delta = np.zeros(m) if null else rng.choice([0.6, 1.5], m)
    a = rng.normal(mu[:, None, None], sa[:, None, None], (m, g, 1))
    d = rng.normal(delta[:, None, None], sd[:, None, None], (m, g, 1))
    x = a + rng.normal(0.0, su, (m, g, t))
    control = rng.random((m, g, t)) < _expit(x - d / 2)
    treated = rng.random((m, g, t)) < _expit(x + d / 2)
    kept = rng.random((m, g, t)) >= 0.1
    n = kept.sum(axis=2).tolist()
    up = (treated & ~control & kept).sum(axis=2).tolist()
    down = (control & ~treated & kept).sum(axis=2).tolist()
    truth = np.zeros(m) if null else _true_uplift(mu, np.sqrt(sa**2 + su**2), delta, sd)
    covered = rejected = 0
    for i in range(m):
        est = paired_uplift([ClusterSums(n[i][j], up[i][j], down[i][j]) for j in range(g)])
        assert est is not None
        covered += est.low <= truth[i] <= est.high
        rejected += est.p < ALPHA
    return Result(covered / m, rejected / m, m)


DESIGNS = ((3, 5), (4, 3), (6, 5), (8, 2), (12, 5), (16, 3), (25, 10), (40, 2))
"""(scenarios, trials per cell): from a handful of scenarios to a large suite."""


def test_simulated_coverage_and_false_positive_rate() -> None:
    rng = np.random.default_rng(20261130)
    alt = {d: simulate(rng, scenarios=d[0], trials=d[1], matrices=400, null=False) for d in DESIGNS}
    null = {d: simulate(rng, scenarios=d[0], trials=d[1], matrices=400, null=True) for d in DESIGNS}
    coverage = sum(r.coverage * r.matrices for r in alt.values()) / sum(r.matrices for r in alt.values())
    fpr = sum(r.rejections * r.matrices for r in null.values()) / sum(r.matrices for r in null.values())
    table = "\n".join(
        f"G={g:2d} T={t:2d}: coverage {alt[(g, t)].coverage:.3f} power {alt[(g, t)].rejections:.3f} "
        f"false positives {null[(g, t)].rejections:.3f}"
        for g, t in DESIGNS
    )
    print(f"\n{table}\npooled over {len(DESIGNS) * 800} matrices: coverage {coverage:.3f}, FPR {fpr:.3f}")
    assert coverage >= 0.93
    assert fpr <= 0.06
    # No design may hide a failure behind the (conservative) small-scenario ones.
    assert min(r.coverage for r in alt.values()) >= 0.91, table
    assert max(r.rejections for r in null.values()) <= 0.08, table
    # And the test is not vacuous: with many scenarios a real uplift is usually found.
    assert alt[(25, 10)].rejections >= 0.6, table


def test_simulated_single_scenario_rows() -> None:
    # Per-scenario rows: one scenario, pairs as units; its own uplift is the truth.
    rng = np.random.default_rng(11)
    rows = []
    for t in (2, 3, 5, 10, 20, 40):
        for null in (False, True):
            m = 300
            pc = rng.uniform(0.05, 0.95, m)
            pt = pc if null else np.clip(pc + rng.uniform(-0.4, 0.6, m), 0.02, 0.98)
            u = rng.random((m, t))
            v = np.where(rng.random((m, t)) < 0.5, u, rng.random((m, t)))  # pairs correlated
            control, treated = u < pc[:, None], v < pt[:, None]
            up = (treated & ~control).sum(axis=1).tolist()
            down = (control & ~treated).sum(axis=1).tolist()
            hits = rejections = 0
            for i in range(m):
                est = paired_uplift([ClusterSums(t, up[i], down[i])])
                assert est is not None
                hits += est.low <= pt[i] - pc[i] <= est.high
                rejections += est.p < ALPHA
            rows.append((t, null, hits / m, rejections / m))
    assert all(cov >= 0.93 for _t, _null, cov, _rej in rows), rows
    assert all(rej <= 0.06 for _t, null, _cov, rej in rows if null), rows
