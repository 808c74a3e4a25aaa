"""Declarative expectations: library references, inline specs, when, pass / fail / unavailable."""

from __future__ import annotations

from pathlib import Path

from harness.grade import grade_run
from tests.grade.helpers import VALID_PY, call, command, demo_job, make_project, make_run, scenario

LIB = {
    "check-after-last-write.yaml": (
        "kind: expectation\nid: check-after-last-write\ndescription: ran the tool's check after the last write\n"
        "trace: { command: mytool, subcommand: check, after_last_write: true }\n"
    ),
    "no-triple-failure.yaml": (
        "kind: expectation\nid: no-triple-failure\n"
        "description: never repeated an identical failing command three times\n"
        "friction: { repeated_failures: 2 }\n"
    ),
    "lint-when-risky.yaml": (
        "kind: expectation\nid: lint-when-risky\nwhen: { stability_risk: true }\n"
        "trace: { command: mytool, subcommand: lint }\n"
    ),
    "explained.yaml": (
        "kind: expectation\nid: explained\ntranscript: { contains: because, role: assistant }\n"
    ),
}


def _project(tmp_path: Path) -> Path:
    project = make_project(tmp_path / "proj", seed={"app/main.py": "x = 1\n"})
    (project / "specs" / "expectations").mkdir()
    for name, text in LIB.items():
        (project / "specs" / "expectations" / name).write_text(text)
    return project


def _outcomes(run: Path, project: Path) -> dict[str, str]:
    return {e.id: e.outcome for e in grade_run(run, project=project).expectations}


def test_expectations_verdicts(tmp_path: Path) -> None:
    project = _project(tmp_path)
    exps = (
        {"id": "check-after-last-write"},
        {"id": "no-triple-failure"},
        {"id": "lint-when-risky"},
        {"id": "explained"},
        {
            "id": "inline-any",
            "any": [{"trace": {"subcommand": "fmt"}}, {"friction": {"help_lookups": {"min": 1}}}],
        },
    )
    scen = scenario([command("ok", "true")], expectations=exps, stability_risk=True)
    failing = [
        call(2, "mytool", "check", exit=1),
        call(3, "mytool", "check", exit=1),
        call(4, "mytool", "check", exit=1),
    ]
    bad = make_run(
        tmp_path / "bad",
        demo_job(scen),
        workspace={"app/main.py": VALID_PY},
        trace=failing,
        snapshots=[(5, "app/main.py", VALID_PY)],
    )
    assert _outcomes(bad, project) == {
        "check-after-last-write": "fail",
        "no-triple-failure": "fail",
        "lint-when-risky": "fail",
        "explained": "unavailable",  # the adapter gave no transcript
        "inline-any": "fail",
    }
    good_trace = [call(1, "mytool", "--help"), call(2, "mytool", "lint"), call(6, "mytool", "check")]
    good = make_run(
        tmp_path / "good",
        demo_job(scen),
        workspace={"app/main.py": VALID_PY},
        trace=good_trace,
        snapshots=[(5, "app/main.py", VALID_PY)],
        transcript=[{"role": "assistant", "text": "Changed it because the test said so."}],
    )
    assert set(_outcomes(good, project).values()) == {"pass"}


def test_when_skips_and_unknown_reference(tmp_path: Path) -> None:
    project = _project(tmp_path)
    scen = scenario([command("ok", "true")], expectations=({"name": "nope"},))
    run = make_run(tmp_path / "r", demo_job(scen), workspace={"app/main.py": VALID_PY}, trace=[])
    grade = grade_run(run, project=project)
    # library expectations apply to every run their `when` matches (not lint-when-risky here)
    assert [(e.id, e.outcome) for e in grade.expectations] == [
        ("check-after-last-write", "fail"),
        ("explained", "unavailable"),
        ("no-triple-failure", "pass"),
        ("nope", "unavailable"),
    ]
    assert "predicate" in grade.expectations[-1].message


def test_scenario_overrides_a_library_expectation(tmp_path: Path) -> None:
    project = _project(tmp_path)
    override = {"name": "lint-when-risky", "when": {"family": "demo"}}
    scen = scenario([command("ok", "true")], expectations=(override,))
    run = make_run(
        tmp_path / "r", demo_job(scen), workspace={"app/main.py": VALID_PY}, trace=[call(1, "mytool", "lint")]
    )
    outcomes = {e.id: e.outcome for e in grade_run(run, project=project).expectations}
    assert outcomes["lint-when-risky"] == "pass"  # applies through the scenario's own `when`


def test_malformed_library_expectation_is_unavailable_not_a_crash(tmp_path: Path) -> None:
    """A library spec edited after the compile (`min: lots`) grades `unavailable`; it never raises."""
    project = _project(tmp_path)
    (project / "specs" / "expectations" / "lots.yaml").write_text(
        "kind: expectation\nid: lots\ntrace: { command: mytool, min: lots }\n"
    )
    scen = scenario([command("ok", "true")])
    run = make_run(tmp_path / "r", demo_job(scen), workspace={"app/main.py": VALID_PY}, trace=[])
    lots = next(e for e in grade_run(run, project=project).expectations if e.id == "lots")
    assert lots.outcome == "unavailable" and "malformed expectation" in lots.message


def test_compiler_knows_every_friction_field() -> None:
    """The compiler types friction bounds by the grade's own field names (it cannot import harness)."""
    from compiler.specs.grading import FrictionDoc
    from harness.artifacts.grade_sections import Friction

    assert list(FrictionDoc.model_fields) == list(Friction.model_fields)
