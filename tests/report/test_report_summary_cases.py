"""summary.json of small trees built for one case each: no control, headroom, versions, how runs
are found and read, sanity agents, the order of conditions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from report_tree import BIN, CONTROL, add_run, build_tree
from scipy.stats import t as student_t

from harness.artifacts.store import FutureSchemaError
from harness.report import build_summary


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
    grade = json.loads((bad_grade / "grade.json").read_text())
    (bad_grade / "grade.json").write_text(json.dumps({**grade, "surprise": 1}))  # a key no assay writes
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
