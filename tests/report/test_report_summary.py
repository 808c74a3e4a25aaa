"""The fixture run tree with hand-computed answers (`report_tree.build_tree`), aggregated into
summary.json. Trees built for one case each are test_report_summary_cases.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from report_tree import BIN, CONTROL, SKILL, build_tree
from scipy.stats import binomtest
from scipy.stats import t as student_t

from harness.artifacts.store import FutureSchemaError
from harness.report import build_summary, read_summary, write_summary
from harness.report.summary import Group, Summary


@pytest.fixture(scope="module")
def summary(tmp_path_factory: pytest.TempPathFactory) -> Summary:
    root = tmp_path_factory.mktemp("tree")
    build_tree(root)
    return build_summary(root)


def condition_row(summary: Summary, condition: str) -> Group:
    return next(g for g in summary.groups if g.by == "condition" and g.condition == condition)


def test_header(summary: Summary) -> None:
    h = summary.header
    assert h.totals.runs == 40
    assert (h.totals.graded, h.totals.failed_to_run, h.totals.ungradeable, h.totals.invalid) == (37, 1, 1, 1)
    assert h.min_graded_per_cell == 4
    assert h.control == CONTROL
    assert h.conditions == [CONTROL, BIN, SKILL]


def test_rates_with_counts_and_wilson(summary: Summary) -> None:
    ctrl, binr = condition_row(summary, CONTROL), condition_row(summary, BIN)
    assert (ctrl.passed.k, ctrl.passed.n) == (3, 12)
    assert (ctrl.usable.k, ctrl.usable.n) == (2, 12)
    assert (binr.passed.k, binr.passed.n) == (9, 13)  # 8/12 paired + the infra-retried trial 7
    assert (binr.counts.runs, binr.counts.failed_to_run, binr.counts.ungradeable, binr.counts.invalid) == (
        16,
        1,
        1,
        1,
    )
    ci = binomtest(9, 13).proportion_ci(method="wilson")
    assert (binr.passed.low, binr.passed.high) == pytest.approx((ci.low, ci.high))
    assert str(ctrl.passed) == "0.25 (3/12)"


def test_paired_uplift_hand_computed(summary: Summary) -> None:
    u = next(u for u in summary.uplifts if u.scenario is None and u.condition == BIN)
    # Pairs: a=3 (both), b=5 (only bin), c=0, d=4; trial 7 has no control partner.
    assert (u.both, u.only_treatment, u.only_control, u.neither, u.pairs) == (3, 5, 0, 4, 12)
    assert (u.rate.k, u.control_rate.k) == (8, 3)
    assert u.value == pytest.approx(5 / 12)
    assert u.mcnemar_p == pytest.approx(binomtest(0, 5, 0.5).pvalue) == 0.0625
    assert u.clusters == 3 and u.units == "scenarios" and u.df == 2
    # Scenario sums 2, 2, 1 over 4 pairs each: CR2 variance 1/144 (the t-test on the scenario means
    # 1/2, 1/2, 1/4) is below the Agresti-Min floor ((5.5 + 0.5) - 5^2/14) / 14^2, so the floor is the SE.
    se = (((5.5 + 0.5) - 25 / 14) / 14**2) ** 0.5
    assert se > (1 / 144) ** 0.5
    half = student_t.ppf(0.975, 2) * se
    assert (u.low, u.high) == pytest.approx((5 / 12 - half, 1.0))
    assert u.p_value == pytest.approx(2 * student_t.sf(5 / 12 / se, 2))
    assert u.p_value > 0.05 and u.low < 0  # the interval and the test agree
    assert u.p_adjusted is not None and u.p_adjusted >= u.p_value and not u.survives
    # Tokens only where both are usable: s1 t1 and s2 t2 (s2 t1's control is not usable).
    assert u.token_pairs == 2
    assert (u.tokens_treatment, u.tokens_control) == (2300, 1200)
    s2 = next(u for u in summary.uplifts if u.scenario == "s2" and u.condition == BIN)
    assert (s2.only_treatment, s2.only_control, s2.pairs) == (2, 0, 4)


def test_cost_and_metrics(summary: Summary) -> None:
    binr = condition_row(summary, BIN)
    total = 12 * 2300 + 1200  # trial 7 used the default 1000 + 200 tokens
    assert binr.cost.tokens_per_run == pytest.approx(total / 13)
    assert binr.cost.tokens_per_usable == pytest.approx(total / 9)
    assert binr.cost.cost_per_usable == pytest.approx(0.01 * 13 / 9)
    assert binr.cost.peak_context is not None and binr.cost.peak_context.max == 5000
    cell = next(c for c in summary.cells if c.key == "s1" and c.condition == BIN)
    assert cell.metrics["tokens"].n == 4 and cell.metrics["turns"].mean == 3
    assert cell.trial_variance == pytest.approx(0.25)  # 3 of 4: sample variance 0.25


def test_split_family_tables(summary: Summary) -> None:
    test_rows = [g for g in summary.groups if g.by == "split" and g.key == "test"]
    by_cond = {g.condition: g.passed for g in test_rows}
    assert (by_cond[CONTROL].k, by_cond[CONTROL].n) == (0, 4)
    assert (by_cond[BIN].k, by_cond[BIN].n) == (1, 4)
    assert {g.key for g in summary.groups if g.by == "family"} == {"lint"}


def test_sections_and_expectations(summary: Summary) -> None:
    rows = {(r.section, r.key): r for r in summary.sections if r.condition == BIN}
    assert rows[("tool_use", "by_subcommand.mytool check.invocations")].total == 24  # 12 graded runs, 2 each
    # Per run is over all 13 graded runs of the condition: trial 7 reported no tool use and counts as 0.
    out = rows[("tool_use", "by_subcommand.mytool check.output_bytes")]
    assert (out.runs, out.graded, out.total) == (12, 13, 4800)
    assert out.per_run == pytest.approx(4800 / 13)
    assert ("tool_use", "present") not in rows
    assert not [r for r in summary.sections if r.condition == CONTROL]  # no trace there: not a zero
    assert rows[("friction", "usage_errors")].total == 3
    e01 = next(e for e in summary.expectations if e.expectation == "E01")
    assert (e01.rate.k, e01.rate.n) == (8, 12)
    e05 = next(e for e in summary.expectations if e.expectation == "E05")
    assert (e05.rate.n, e05.unavailable) == (0, 12)


def test_diagnostics_and_findings(summary: Summary) -> None:
    kinds = {d.kind: d for d in summary.diagnostics}
    assert kinds["invalid"].evidence == ["s1/scripted/bin/none/off/trial-06"]
    assert "canary" in kinds["invalid"].message
    assert kinds["failed_to_run"].evidence == ["s1/scripted/bin/none/off/trial-05"]
    assert kinds["ungradeable"].evidence == ["s2/scripted/bin/none/off/trial-05"]
    assert kinds["infra"].evidence == ["s2/scripted/bin/none/off/trial-07"]
    assert any("exit code 1" in d.message for d in summary.diagnostics)
    assert "headroom" not in kinds
    assert any("keeps-api" in e for e in kinds["no-signal-check"].evidence)
    nodisc = [d for d in summary.diagnostics if d.kind == "no-discrimination"]
    assert nodisc == []  # s3: control 0/4, bin 1/4, skill 4/4
    layers = {(f.layer, f.kind): f for f in summary.findings}
    assert layers[("engine", "failed-layer")].runs == ["s3/scripted/bin/none/off/trial-01"]
    assert layers[("tool", "notable-exit")].runs == ["s1/scripted/bin/none/off/trial-02"]
    assert "`mytool check` exited 3" in layers[("tool", "notable-exit")].detail
    assert layers[("authorities", "disagreement")].runs == ["s2/scripted/bin/none/off/trial-03"]
    assert "mytool accepts, oracle rejects" in layers[("authorities", "disagreement")].detail


def test_summary_roundtrip_and_future_schema(summary: Summary, tmp_path: Path) -> None:
    path = tmp_path / "summary.json"
    write_summary(path, summary)
    assert read_summary(path) == summary
    data = json.loads(path.read_text())
    data["schema_version"] = 99
    path.write_text(json.dumps(data))
    with pytest.raises(FutureSchemaError, match="newer"):
        read_summary(path)


def test_uplift_by_split(summary: Summary) -> None:
    by_split = {u.split: u for u in summary.uplifts if u.split is not None and u.condition == BIN}
    # train = s1 + s2: a=3, b=4 (s1 t2, t3; s2 t3, t4), c=0, d=1; test = s3: b=1 (t2), d=3.
    train, test = by_split["train"], by_split["test"]
    assert (train.both, train.only_treatment, train.only_control, train.neither, train.clusters) == (
        3,
        4,
        0,
        1,
        2,
    )
    assert (test.both, test.only_treatment, test.only_control, test.neither, test.clusters) == (0, 1, 0, 3, 1)
    assert test.value == pytest.approx(0.25) and (test.units, test.df) == ("pairs", 3)
    headline = [u for u in summary.uplifts if u.scenario is None and u.split is None and u.condition == BIN]
    assert len(headline) == 1 and headline[0].pairs == 12
