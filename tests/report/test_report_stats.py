"""The statistics against scipy and textbook values (scipy only here, never at run time)."""

from __future__ import annotations

import math

import pytest
from scipy.stats import binomtest

from harness.report.stats import Moments, detectable_uplift, mcnemar_exact, runs_needed, wilson


@pytest.mark.parametrize("n", [1, 2, 3, 5, 10, 17, 50, 200])
def test_wilson_matches_scipy(n: int) -> None:
    for k in range(n + 1):
        ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
        low, high = wilson(k, n)
        assert low == pytest.approx(ci.low, abs=1e-12)
        assert high == pytest.approx(ci.high, abs=1e-12)


def test_wilson_textbook_values() -> None:
    # Newcombe (1998a) table I: 0/10 -> 0, 0.2775; 1/29 -> 0.0061, 0.1718; 81/263 -> 0.2553, 0.3662.
    assert wilson(0, 10) == pytest.approx((0.0, 0.2775), abs=5e-5)
    assert wilson(1, 29) == pytest.approx((0.0061, 0.1718), abs=5e-5)
    assert wilson(81, 263) == pytest.approx((0.2553, 0.3662), abs=5e-5)
    assert wilson(1, 2) == pytest.approx((0.0945, 0.9055), abs=5e-5)
    assert wilson(0, 0) == (0.0, 1.0)


@pytest.mark.parametrize(
    "b,c", [(0, 0), (0, 1), (1, 0), (2, 9), (9, 2), (5, 5), (0, 12), (30, 41), (7, 1), (400, 460), (600, 530)]
)
def test_mcnemar_exact_matches_scipy(b: int, c: int) -> None:
    expected = 1.0 if b + c == 0 else binomtest(b, b + c, 0.5).pvalue
    assert mcnemar_exact(b, c) == pytest.approx(expected, rel=1e-9, abs=1e-15)


def test_mcnemar_textbook() -> None:
    # 5 discordant pairs all one way: p = 2 * 0.5**5 = 0.0625 (hand computed).
    assert mcnemar_exact(5, 0) == 0.0625
    assert mcnemar_exact(2, 9) == pytest.approx(2 * (1 + 11 + 55) / 2**11)


def test_moments() -> None:
    m = Moments()
    for x in (2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0):
        m.add(x)
    assert (m.n, m.mean, m.low, m.high) == (8, 5.0, 2.0, 9.0)
    assert m.stddev == pytest.approx(math.sqrt(32 / 7))


def test_power_textbook() -> None:
    # Fleiss, no continuity correction: 0.5 -> 0.7 at alpha 0.05 two-sided, 80% power: 93 per arm.
    assert runs_needed(0.5, 0.2) == 93
    assert runs_needed(0.5, 0.2, power=0.9) == 124
    assert runs_needed(0.9, 0.2) is None
    d = detectable_uplift(0.5, 93)
    assert d is not None and d == pytest.approx(0.2, abs=2e-3)
    assert runs_needed(0.5, d) <= 93 < runs_needed(0.5, d - 0.005)  # type: ignore[operator]
    assert detectable_uplift(0.5, 3) is None
    assert detectable_uplift(1.0, 100) is None


def test_moments_merge_equals_one_pass() -> None:
    xs = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0, 5.0, 3.0]
    whole, left, right, empty = Moments(), Moments(), Moments(), Moments()
    for i, x in enumerate(xs):
        whole.add(x)
        (left if i < 4 else right).add(x)
    left.merge(right)
    left.merge(empty)
    empty.merge(left)
    for m in (left, empty):
        assert (m.n, m.low, m.high) == (whole.n, whole.low, whole.high)
        assert m.mean == pytest.approx(whole.mean) and m.stddev == pytest.approx(whole.stddev)


def test_evidence_keeps_the_first_paths_whatever_the_order() -> None:
    from harness.report.diagnostics import EVIDENCE_CAP, Evidence

    paths = [f"run-{i:03d}" for i in range(100)]
    forward, backward, left, right = Evidence(), Evidence(), Evidence(), Evidence()
    for p in paths:
        forward.add(p)
        (left if int(p[-3:]) % 2 else right).add(p)
    for p in reversed(paths):
        backward.add(p)
    left.merge(right)
    expected = [*paths[:EVIDENCE_CAP], f"... and {100 - EVIDENCE_CAP} more"]
    assert forward.listing() == backward.listing() == left.listing() == expected
