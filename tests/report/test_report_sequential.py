"""Sequential decisions: the group-sequential boundary against published values and Monte Carlo, the
e-value by hand, replay by hand, and a simulation of thousands of sequential matrices (numpy,
vectorised; cross-checked against `replay` itself) for the error rate and the trials it saves."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest
from scipy import special, stats

from harness.report.inference import ALPHA
from harness.report.sequential import Design, Key, e_value, is_open, nominal_levels, replay, spent


def test_pocock_type_boundaries_match_published_values() -> None:
    # Lan-DeMets Pocock-type spending, 5 equally spaced looks, two-sided 0.05 (as gsDesign tabulates).
    z = [stats.norm.isf(level / 2) for level in nominal_levels(5, 0.05)]
    assert z == pytest.approx([2.4380, 2.4268, 2.4101, 2.3966, 2.3859], abs=2e-4)
    assert nominal_levels(1, 0.05) == pytest.approx((0.05,), rel=1e-9)
    assert nominal_levels(0, 0.05) == ()


@pytest.mark.parametrize(("rounds", "alpha"), [(4, 0.05), (12, 0.0125)])
def test_boundaries_spend_alpha_look_by_look(rounds: int, alpha: float) -> None:
    rng = np.random.default_rng(3)
    walks = np.cumsum(rng.normal(size=(200_000, rounds)), axis=1) / np.sqrt(np.arange(1, rounds + 1))
    crossed = np.abs(walks) >= stats.norm.isf(np.array(nominal_levels(rounds, alpha)) / 2)
    first = np.where(crossed.any(axis=1), crossed.argmax(axis=1), -1)
    for k in range(rounds):
        target = spent((k + 1) / rounds, alpha) - spent(k / rounds, alpha)
        assert (first == k).mean() == pytest.approx(target, rel=0.15, abs=2e-4), k
    assert (first >= 0).mean() == pytest.approx(alpha, rel=0.05)


def test_e_value_by_hand() -> None:
    # n pairs all won by the treatment: 2^n * Gamma(n + 1/2) / (sqrt(pi) * n!).
    for n in (1, 5, 12):
        assert e_value(n, 0) == pytest.approx(
            2**n * math.gamma(n + 0.5) / (math.sqrt(math.pi) * math.factorial(n))
        )
    assert e_value(0, 0) == 1.0
    assert e_value(3, 3) < 1.0  # balanced signs are evidence for no uplift
    assert e_value(4, 1) == pytest.approx(e_value(1, 4))  # two-sided
    assert e_value(12, 0) < 800 < e_value(13, 0)


KEY: Key = (None, "good", "none/memory/off")
OTHER: Key = (None, "good", "bin/none/off")


def test_a_scenario_that_always_differs_is_decided_alone() -> None:
    # Two comparisons x five scenarios: the scenario threshold is 10 / 0.025 = 400, reached at 12 wins.
    design = Design(rounds=20, comparisons=2, scenario_comparisons=10)
    assert design.threshold == pytest.approx(400.0)
    flat = {t: 0 for t in range(1, 21)}
    data = {
        KEY: {"handoff": {t: 1 for t in range(1, 21)}, **{f"s{i}": flat for i in range(4)}},
        OTHER: {"handoff": flat, **{f"s{i}": flat for i in range(4)}},
    }
    verdicts = replay(data, design, looks=20)
    handoff = verdicts[(KEY, "handoff")]
    assert (handoff.status, handoff.round, handoff.pairs) == ("effect", 12, 12)
    assert handoff.e_value is not None and handoff.e_value >= 400
    assert verdicts[(KEY, None)].status == "open"  # one scenario of five does not decide the pooled uplift
    assert (
        not is_open(verdicts, KEY, "handoff")
        and is_open(verdicts, KEY, "s0")
        and is_open(verdicts, OTHER, "handoff")
    )
    # The stopped scenario's later trials never enter the pooled estimate: 12 + 4 x 20 pairs.
    assert verdicts[(KEY, None)].pairs == 92
    assert replay(data, design, looks=11)[(KEY, "handoff")].status == "open"


def test_a_pooled_uplift_decides_every_scenario_and_min_uplift_stops_a_small_one() -> None:
    design = Design(rounds=10, comparisons=1, scenario_comparisons=12, min_uplift=0.2)
    rng = np.random.default_rng(5)
    strong = {f"s{i}": {t: int(rng.random() < 0.6) for t in range(1, 11)} for i in range(12)}
    verdicts = replay({KEY: strong}, design, looks=10)
    pooled = verdicts[(KEY, None)]
    assert pooled.status == "effect" and pooled.round is not None and pooled.round < 10
    assert pooled.low > 0 and pooled.level == pytest.approx(design.levels()[pooled.round - 1])
    assert not any(is_open(verdicts, KEY, s) for s in strong)
    # Pairs that agree: the interval closes in on 0 and falls below the uplift that matters.
    nothing = {f"s{i}": dict.fromkeys(range(1, 11), 0) for i in range(12)}
    quiet = replay({KEY: nothing}, design, looks=10)[(KEY, None)]
    assert quiet.status == "below" and quiet.high < 0.2
    assert (
        replay({KEY: nothing}, Design(rounds=10, comparisons=1, scenario_comparisons=12), 10)[
            (KEY, None)
        ].status
        == "open"
    )


def test_missing_pairs_are_absent_not_zero() -> None:
    design = Design(rounds=20, comparisons=0, scenario_comparisons=1)
    assert design.threshold == pytest.approx(20.0)
    diffs = {t: 1 for t in range(1, 21) if t != 3}
    verdict = replay({KEY: {"only": diffs}}, design, looks=20)[(KEY, "only")]
    assert (
        verdict.pairs == 7
        and verdict.round == 8
        and (KEY, None) not in replay({KEY: {"only": diffs}}, design, 20)
    )


# --- simulation -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Runs:
    declared: np.ndarray
    """Per matrix: any effect declared (pooled or a scenario)."""
    pooled: np.ndarray
    """Per matrix: the pooled comparison declared an effect."""
    used: np.ndarray
    """Per matrix: the share of the planned treatment trials that ran."""
    stop: np.ndarray
    scenario_stop: np.ndarray


def _pairs(rng: np.random.Generator, pc: np.ndarray, pt: np.ndarray, rounds: int) -> np.ndarray:
    """Paired differences (matrices, scenarios, rounds): both sides of a pair share a latent draw (rho 0.5)."""
    shape = (*pc.shape, rounds)
    shared = rng.normal(size=shape)
    z_c = np.sqrt(0.5) * shared + np.sqrt(0.5) * rng.normal(size=shape)
    z_t = np.sqrt(0.5) * shared + np.sqrt(0.5) * rng.normal(size=shape)
    control = stats.norm.cdf(z_c) < pc[..., None]
    treated = stats.norm.cdf(z_t) < pt[..., None]
    return treated.astype(np.int8) - control.astype(np.int8)


def sequential(d: np.ndarray, design: Design) -> Runs:
    """`replay` vectorised over matrices of one comparison with G scenarios and no missing pairs."""
    m, g, k_max = d.shape
    up, down = np.cumsum(d == 1, axis=2), np.cumsum(d == -1, axis=2)
    log_e = special.betaln(up + 0.5, down + 0.5) - special.betaln(0.5, 0.5) + (up + down) * math.log(2.0)
    hit = (log_e >= math.log(design.threshold)) & (up != down)
    scenario_stop = np.where(hit.any(axis=2), hit.argmax(axis=2) + 1, k_max + 1)
    stop = np.full(m, k_max + 1)
    levels = design.levels()
    for k in range(1, k_max + 1):
        n = np.minimum(k, scenario_stop)
        at = (n - 1)[..., None]
        ups, downs = np.take_along_axis(up, at, 2)[..., 0], np.take_along_axis(down, at, 2)[..., 0]
        total, sums = n.sum(axis=1), ups - downs
        mean = sums.sum(axis=1) / total
        cr2 = ((sums - n * mean[:, None]) ** 2 / (1 - n / total[:, None])).sum(axis=1) / total**2
        b, c, pairs = ups.sum(axis=1) + 0.5, downs.sum(axis=1) + 0.5, total + 2.0
        floor = ((b + c) - (b - c) ** 2 / pairs) / pairs**2
        p = 2 * stats.t.sf(np.abs(mean) / np.sqrt(np.maximum(cr2, floor)), g - 1)
        decided = (p < levels[k - 1]) & (stop > k_max)
        stop[decided] = k
    scenario_declared = (scenario_stop <= k_max) & (scenario_stop <= stop[:, None])
    used = np.minimum(np.minimum(scenario_stop, stop[:, None]), k_max).sum(axis=1) / (g * k_max)
    return Runs(scenario_declared.any(axis=1) | (stop <= k_max), stop <= k_max, used, stop, scenario_stop)


def test_the_vectorised_simulation_is_replay() -> None:
    rng = np.random.default_rng(17)
    design = Design(rounds=8, comparisons=1, scenario_comparisons=6)
    pc = rng.uniform(0.1, 0.6, (150, 6))
    d = _pairs(rng, pc, pc + rng.choice([0.0, 0.3, 0.5], (150, 1)), 8)
    runs = sequential(d, design)
    for i in range(150):
        data = {KEY: {f"s{j}": {t + 1: int(d[i, j, t]) for t in range(8)} for j in range(6)}}
        verdicts = replay(data, design, looks=8)
        pooled = verdicts[(KEY, None)]
        assert (pooled.round or 9) == runs.stop[i], i
        for j in range(6):
            decided = verdicts[(KEY, f"s{j}")].round
            stop = runs.scenario_stop[i, j]
            expected = stop if stop <= min(runs.stop[i], 8) else None
            assert decided == expected, (i, j)


DESIGNS = ((10, 10), (10, 20), (20, 10), (20, 20), (40, 10))
"""(scenarios, planned trials per cell)."""


def test_simulated_error_rate_and_early_stopping() -> None:
    rng = np.random.default_rng(20261201)
    matrices = 600
    rows, sharp, mixed, alt = [], {}, {}, {}
    for g, k in DESIGNS:
        design = Design(rounds=k, comparisons=1, scenario_comparisons=g)
        pc = rng.uniform(0.25, 0.75, (matrices, g))
        sharp[(g, k)] = sequential(_pairs(rng, pc, pc, k), design)
        shift = rng.uniform(-0.2, 0.2, (matrices, g))  # scenarios disagree; the population uplift is 0
        mixed[(g, k)] = sequential(_pairs(rng, pc, pc + shift, k), design)
        base = rng.uniform(0.1, 0.6, (matrices, g))
        alt[(g, k)] = sequential(
            _pairs(rng, base, base + 0.3 + rng.uniform(-0.1, 0.1, (matrices, g)), k), design
        )
        rows.append(
            f"G={g:2d} K={k:2d}: no uplift declared {sharp[(g, k)].declared.mean():.3f}, "
            f"scenarios disagreeing (population 0) pooled declared {mixed[(g, k)].pooled.mean():.3f} | "
            f"uplift 0.3: found {alt[(g, k)].pooled.mean():.3f}, trials run {alt[(g, k)].used.mean():.3f} of the plan"
        )
    table = "\n".join(rows)
    null_matrices = matrices * len(DESIGNS)
    fwer = sum(r.declared.sum() for r in sharp.values()) / null_matrices
    print(f"\n{table}\nno uplift, {null_matrices} matrices: declared {fwer:.4f}")
    assert null_matrices >= 2000
    assert fwer <= ALPHA, table
    assert max(r.declared.mean() for r in sharp.values()) <= ALPHA, table
    assert max(r.pooled.mean() for r in mixed.values()) <= ALPHA, table
    # A true uplift of 0.3 stops, on average, before half of the planned trials (10 scenarios x 10
    # trials, the smallest design, needs a little more: about 57%).
    assert all(alt[d].used.mean() < 0.5 for d in DESIGNS if d != (10, 10)), table
    assert alt[(10, 10)].used.mean() < 0.65, table
    assert min(r.pooled.mean() for r in alt.values()) >= 0.8, table
