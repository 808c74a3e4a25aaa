"""Per-test outcomes of suite checks (`pytest`) reach summary.json and report.md, one row per test."""

from __future__ import annotations

from pathlib import Path

from report_tree import CONTROL, a_grade, add_run

from harness.artifacts.records import CaseOutcome, CheckOutcome, RunStatus
from harness.artifacts.store import write_record
from harness.report import build_summary


def _graded(run_dir: Path, cases: dict[str, str]) -> None:
    tests = tuple(CaseOutcome(id=i, outcome=o) for i, o in cases.items())  # type: ignore[arg-type]
    passed = all(o != "fail" for o in cases.values())
    check = CheckOutcome(
        id="tests", kind="pytest", layer="agent", outcome="pass" if passed else "fail", tests=tests
    )
    write_record(
        run_dir / "grade.json", a_grade(RunStatus.GRADED, passed=passed, usable=passed, checks=(check,))
    )


def test_each_test_gets_its_pass_rate(tmp_path: Path) -> None:
    for trial, second in ((1, "pass"), (2, "fail"), (3, "skip")):
        run = add_run(tmp_path, scenario="s", cell=CONTROL, trial=trial, grade=False)
        _graded(run, {"test_a.py::test_one": "pass", "test_a.py::test_two": second})
    summary = build_summary(tmp_path)
    rows = {(t.scenario, t.test): (t.rate.k, t.rate.n) for t in summary.tests}
    assert rows == {("s", "tests::test_a.py::test_one"): (3, 3), ("s", "tests::test_a.py::test_two"): (2, 3)}
