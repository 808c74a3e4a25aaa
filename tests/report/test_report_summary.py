"""Fixture run trees with hand-computed answers, aggregated into summary.json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from report_tree import CONTROL, add_run
from scipy.stats import binomtest
from scipy.stats import t as student_t

from harness.artifacts.grade_sections import (
    Disagreement,
    ExpectationOutcome,
    Friction,
    NotableExit,
    SubcommandUse,
    ToolUse,
)
from harness.artifacts.records import RunStatus
from harness.artifacts.store import FutureSchemaError
from harness.report import build_summary, read_summary, write_summary
from harness.report.summary import Group, Summary

BIN = "bin/none/off"
SKILL = "bin+skill/wiki/on"
# Pass (1) / fail (0) per trial 1..4.
CONTROL_PASS = {"s1": [1, 0, 0, 0], "s2": [1, 1, 0, 0], "s3": [0, 0, 0, 0]}
BIN_PASS = {"s1": [1, 1, 1, 0], "s2": [1, 1, 1, 1], "s3": [0, 1, 0, 0]}


def build_tree(root: Path) -> None:
    for scenario in ("s1", "s2", "s3"):
        split = "test" if scenario == "s3" else "train"
        for trial in range(1, 5):
            ctrl = bool(CONTROL_PASS[scenario][trial - 1])
            add_run(
                root,
                scenario=scenario,
                cell=CONTROL,
                trial=trial,
                passed=ctrl,
                family="lint",
                split=split,
                usable=False if (scenario, trial) == ("s2", 1) else None,
                checks=[("works", "agent", "pass" if ctrl else "fail"), ("keeps-api", "agent", "pass")],
            )
            ok = bool(BIN_PASS[scenario][trial - 1])
            checks = [("works", "agent", "pass" if ok else "fail"), ("keeps-api", "agent", "pass")]
            if (scenario, trial) == ("s3", 1):
                checks.append(("engine-ok", "engine", "fail"))
            notable = (
                (NotableExit(index=1, argv=("mytool", "check"), exit=3),)
                if (scenario, trial) == ("s1", 2)
                else ()
            )
            sections: dict[str, Any] = {
                "tool_use": ToolUse(
                    present=True,
                    invocations=3,
                    by_subcommand={
                        "mytool check": SubcommandUse(invocations=2, output_bytes=400, est_output_tokens=100),
                        "mytool lint": SubcommandUse(invocations=1),
                    },
                    notable_exits=notable,
                ),
                "friction": Friction(usage_errors=1 if trial == 1 else 0, help_lookups=2),
                "expectations": (
                    ExpectationOutcome(id="E01", outcome="pass" if ok else "fail"),
                    ExpectationOutcome(id="E05", outcome="unavailable"),
                ),
            }
            if (scenario, trial) == ("s2", 3):
                sections["disagreement"] = (
                    Disagreement(
                        accepts="mytool", rejects="oracle", direction="mytool accepts, oracle rejects"
                    ),
                )
            add_run(
                root,
                scenario=scenario,
                cell=BIN,
                trial=trial,
                passed=ok,
                family="lint",
                split=split,
                tokens=(2000, 300),
                checks=checks,
                sections=sections,
            )
            add_run(root, scenario=scenario, cell=SKILL, trial=trial, passed=True, family="lint", split=split)
    add_run(
        root,
        scenario="s1",
        cell=BIN,
        trial=5,
        status=RunStatus.FAILED_TO_RUN,
        passed=False,
        error="adapter crashed",
        exit_code=1,
    )
    add_run(
        root, scenario="s1", cell=BIN, trial=6, passed=False, invalid="canary: mytool reachable under none"
    )
    add_run(
        root,
        scenario="s2",
        cell=BIN,
        trial=5,
        status=RunStatus.UNGRADEABLE,
        passed=False,
        error="workspace missing",
    )
    add_run(root, scenario="s2", cell=BIN, trial=7, passed=True, infra_retries=2)


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


def test_no_control_reports_rates_only(tmp_path: Path) -> None:
    for t in (1, 2):
        add_run(tmp_path, scenario="s", cell=BIN, trial=t, passed=t == 1)
    s = build_summary(tmp_path)
    assert s.header.control is None and s.uplifts == []
    assert s.diagnostics[0].kind == "no-control"


def test_headroom_and_no_discrimination(tmp_path: Path) -> None:
    for t in range(1, 21):
        add_run(tmp_path, scenario="easy", cell=CONTROL, trial=t, passed=True)
        add_run(tmp_path, scenario="easy", cell=BIN, trial=t, passed=True)
    s = build_summary(tmp_path)
    kinds = {d.kind for d in s.diagnostics}
    assert {"headroom", "no-discrimination"} <= kinds
    u = s.uplifts[0]
    assert (u.value, u.mcnemar_p, u.detectable) == (0.0, 1.0, None)


def test_version_comparison_with_control_drift(tmp_path: Path) -> None:
    # baseline v1: control 1/4, bin 3/4 -> uplift +0.50; candidate v2: control 2/4, bin 3/4 -> +0.25.
    outcomes = {"v1": ([1, 0, 0, 0], [1, 1, 1, 0]), "v2": ([1, 1, 0, 0], [1, 1, 1, 0])}
    for version, (ctrl, binp) in outcomes.items():
        for t in range(1, 5):
            add_run(tmp_path, scenario="s", cell=CONTROL, trial=t, passed=bool(ctrl[t - 1]), version=version)
            add_run(tmp_path, scenario="s", cell=BIN, trial=t, passed=bool(binp[t - 1]), version=version)
            add_run(
                tmp_path, scenario="s", cell=CONTROL, trial=t, agent="oracle", sanity="pass", version=version
            )
    (tmp_path / "versions.json").write_text(
        json.dumps({"schema_version": 1, "baseline": "v2", "candidate": "v1"})
    )
    s = build_summary(tmp_path)
    assert s.header.versions == ["v2", "v1"]  # baseline first, from versions.json
    agg = next(d for d in s.version_deltas if d.scenario is None)
    assert agg.value == pytest.approx(0.5 - 0.25)
    (drift,) = s.control_drift  # the oracle (a sanity bound) has no drift to read
    assert drift.agent == "scripted"
    assert (drift.baseline.k, drift.candidate.k, drift.pairs) == (2, 1, 4)
    assert drift.value == pytest.approx(-0.25)
    # One scenario, 4 pairs (one -1): pairs are the units; sample variance 1/4 over 4 beats the floor.
    se = ((1 - 4 * 0.25**2) / 3 / 4) ** 0.5
    assert (drift.low, drift.high) == pytest.approx((-1.0, -0.25 + student_t.ppf(0.975, 3) * se))
    assert drift.p_value == pytest.approx(2 * student_t.sf(0.25 / se, 3))


def test_parallel_collection_gives_the_same_summary(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    root.mkdir()
    build_tree(root)
    add_run(root, scenario="s3", cell=BIN, trial=9, passed=False, exit_code=75, infra_retries=1)
    serial = build_summary(root, jobs=1)
    for jobs in (2, 3):
        assert build_summary(root, jobs=jobs) == serial


def test_runs_are_found_by_manifest_not_depth(tmp_path: Path) -> None:
    from harness.artifacts.run_tree import find_runs
    from harness.report.walk import walk_runs

    deep = add_run(tmp_path / "a" / "b", scenario="s", cell=CONTROL, trial=1)
    shallow = add_run(tmp_path, scenario="t", cell=BIN, trial=1)
    (deep / "workspace" / "x").mkdir(parents=True)
    (deep / "workspace" / "x" / "run.json").write_text("{}")  # an agent's file, not a run
    (tmp_path / ".hidden" / "z").mkdir(parents=True)
    found = [d for d, _ in walk_runs(tmp_path)]
    assert found == [str(p) for p in find_runs(tmp_path)] == sorted([str(deep), str(shallow)])
    assert build_summary(tmp_path).header.totals.runs == 2


def test_corrupt_records_are_counted_not_fatal(tmp_path: Path) -> None:
    add_run(tmp_path, scenario="s", cell=CONTROL, trial=1)
    bad_run = add_run(tmp_path, scenario="s", cell=CONTROL, trial=2)
    (bad_run / "run.json").write_text('{"job_id": ')
    bad_grade = add_run(tmp_path, scenario="s", cell=CONTROL, trial=3)
    (bad_grade / "grade.json").write_text('{"status": "graded", "surprise": 1}')
    for jobs in (1, 2):
        s = build_summary(tmp_path, jobs=jobs)
        assert (s.header.totals.runs, s.header.totals.unreadable, s.header.totals.ungradeable) == (3, 1, 1)
        kinds = {d.kind: d for d in s.diagnostics}
        assert kinds["unreadable"].evidence[0].startswith("s/scripted/none/none/off/trial-02: run.json:")
        assert "unreadable grade.json" in kinds["ungradeable"].message
    future = add_run(tmp_path, scenario="s", cell=CONTROL, trial=4)
    data = json.loads((future / "grade.json").read_text())
    data["schema_version"] = 99
    (future / "grade.json").write_text(json.dumps(data))
    with pytest.raises(FutureSchemaError):
        build_summary(tmp_path, jobs=1)


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


def test_sanity_agents_are_bounds_not_measurements(tmp_path: Path) -> None:
    for t in (1, 2, 3, 4):
        for scenario in ("a", "b"):
            add_run(tmp_path, scenario=scenario, cell=CONTROL, trial=t, passed=t == 1)
            add_run(tmp_path, scenario=scenario, cell=BIN, trial=t, passed=t <= 3)
            # The oracle fails once in b; the no-op passes nothing; both also ran the treatment.
            oracle_ok = (scenario, t) != ("b", 2)
            for cell in (CONTROL, BIN):
                add_run(
                    tmp_path,
                    scenario=scenario,
                    cell=cell,
                    trial=t,
                    agent="oracle",
                    passed=oracle_ok,
                    sanity="pass",
                )
                add_run(
                    tmp_path, scenario=scenario, cell=cell, trial=t, agent="noop", passed=False, sanity="fail"
                )
    s = build_summary(tmp_path)
    assert s.header.sanity == {"noop": "fail", "oracle": "pass"}
    assert {u.agent for u in s.uplifts} == {"scripted"}
    assert all(u.comparisons == 1 for u in s.uplifts if u.scenario is None and u.split is None)
    kinds = [d.kind for d in s.diagnostics]
    assert "headroom" not in kinds  # the oracle's 15/16 control is its job, not a missing headroom
    (sanity,) = [d for d in s.diagnostics if d.kind == "sanity"]
    assert sanity.severity == "warning" and "oracle" in sanity.message and "failed 2 run(s)" in sanity.message
    assert sanity.evidence == [f"b {CONTROL}: passed 0.75 (3/4)", "b bin/none/off: passed 0.75 (3/4)"]
    assert not any(
        "scenario" in d.message and "oracle" in d.message
        for d in s.diagnostics
        if d.kind == "no-discrimination"
    )
    # Still in the rates: a sanity bound is worth seeing.
    assert any(g.agent == "oracle" for g in s.groups if g.by == "condition")


def test_ungraded_runs_are_graded_by_the_report(tmp_path: Path) -> None:
    pytest.importorskip("harness.grade", reason="the grader (harness.grade) is not installed")
    add_run(tmp_path, scenario="s", cell=CONTROL, trial=1)
    ungraded = add_run(tmp_path, scenario="s", cell=CONTROL, trial=2, grade=False)  # and no job.json
    s = build_summary(tmp_path, jobs=1)
    assert (ungraded / "grade.json").is_file()  # the grader wrote its verdict back
    assert (s.header.totals.graded, s.header.totals.ungradeable, s.header.totals.ungraded) == (1, 1, 0)
    (diag,) = [d for d in s.diagnostics if d.kind == "ungradeable"]
    assert "job.json" in diag.message and diag.evidence == ["s/scripted/none/none/off/trial-02"]


def test_conditions_in_increasing_treatment(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    for cell in ("bin/wiki/off", "bin+skill/none/off", CONTROL, "bin/none/off"):
        add_run(tree, scenario="s", cell=cell, trial=1)
    assert build_summary(tree).header.conditions == [
        CONTROL,
        "bin/none/off",
        "bin+skill/none/off",
        "bin/wiki/off",
    ]
    project = tmp_path / "project"
    (project / "generated").mkdir(parents=True)
    factors = {"tool": ["none", "bin+skill", "bin"], "knowledge": ["none", "wiki"], "network": ["off", "on"]}
    (project / "generated" / "manifest.json").write_text(json.dumps({"factors": factors}))
    ordered = build_summary(tree, project=project).header.conditions
    assert ordered == [CONTROL, "bin+skill/none/off", "bin/none/off", "bin/wiki/off"]  # as declared
