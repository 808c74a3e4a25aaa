"""Seed 000's scenario.json, unchanged: `expected`, seed-overlay negatives, `x-` names."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler.errors import SpecErrors
from compiler.load import inputs_of
from compiler.pipeline import build, plan_of

SEED000 = Path(__file__).resolve().parents[1] / "fixtures" / "seed000"

BASE = {
    "specs/project.yaml": b"kind: project\nspec_version: 1\nname: mem\nfactors:\n  tool: { none: {} }\ncontrol: none\n",
    "specs/agent.yaml": b"kind: agent\nid: a\nadapter: noop\n",
    "specs/m.yaml": b"kind: matrix\nid: m\nagents: [a]\n",
    "scenarios/s/prompt.md": b"Write out.txt.\n",
    "scenarios/s/seed/.gitkeep": b"",
    "scenarios/s/reference/out.txt": b"x\n",
}


def _plan(scenario: bytes, **extra: bytes) -> object:
    files = {**BASE, "scenarios/s/scenario.yaml": scenario, **extra}
    return plan_of(inputs_of(Path("/nonexistent"), files))


def test_seed000_fixture_compiles_unchanged() -> None:
    job = build(SEED000).validated.scenarios["greet"].job
    greeting = next(c for c in job.checks if c.id == "greeting")
    assert greeting.params == {"key": "greeting", "equals": "hello"}
    negatives = {n.name: n for n in job.negatives}
    assert sorted(negatives) == ["answer-only", "wrong-answer", "x-keeps-newline"]
    assert {n.base for n in negatives.values()} == {"seed"}
    assert negatives["x-keeps-newline"].dir == "scenarios/greet/negative/x-keeps-newline"


def test_yaml_form_lays_negatives_on_the_reference() -> None:
    plan = _plan(
        b"kind: scenario\nid: s\nchecks: [{ id: c, kind: file-exists, path: out.txt }]\n"
        b"negatives: { x-gone: { fails: [c] } }\n",
        **{"scenarios/s/negatives/x-gone/other.txt": b""},
    )
    (neg,) = plan.validated.scenarios["s"].job.negatives  # type: ignore[attr-defined]
    assert (neg.name, neg.base) == ("x-gone", "reference")


def test_x_keys_where_a_field_could_be_are_extensions() -> None:
    plan = _plan(
        b"kind: scenario\nid: s\nx-owner: { team: infra }\n"
        b"checks: [{ id: x-out, kind: file-exists, path: out.txt, x-note: free }]\n"
        b"meta: { x-kept: 1 }\n"
    )
    job = plan.validated.scenarios["s"].job  # type: ignore[attr-defined]
    assert [(c.id, c.params) for c in job.checks] == [("x-out", {"path": "out.txt", "exists": True})]


def test_equals_and_expected_together_is_an_error() -> None:
    with pytest.raises(SpecErrors) as info:
        _plan(b"kind: scenario\nid: s\nchecks: [{ id: a, kind: answer, key: k, equals: 1, expected: 1 }]\n")
    assert [e.text().splitlines()[0] for e in info.value.errors] == [
        "scenarios/s/scenario.yaml:3:52: error[E100]: checks[0].expected: "
        "give the expected value once: `equals` or `expected`, not both"
    ]


def test_negatives_may_name_tests_of_a_pytest_check() -> None:
    plan = _plan(
        b"kind: scenario\nid: s\nchecks:\n"
        b"  - { id: tests, kind: pytest, tests: [grader/test_out.py], args: [-x] }\n"
        b"  - { id: out, kind: file-exists, path: out.txt }\n"
        b"negatives: { empty: { fails: ['tests::test_out.py::test_content'] } }\n",
        **{"scenarios/s/negatives/empty/out.txt": b""},
    )
    job = plan.validated.scenarios["s"].job  # type: ignore[attr-defined]
    assert job.checks[0].params == {"tests": ["grader/test_out.py"], "args": ["-x"]}
    with pytest.raises(SpecErrors) as info:
        _plan(
            b"kind: scenario\nid: s\nchecks: [{ id: out, kind: file-exists, path: out.txt }]\n"
            b"negatives: { empty: { fails: ['out::test_x'] } }\n",
            **{"scenarios/s/negatives/empty/out.txt": b""},
        )
    assert [e.text().splitlines()[0] for e in info.value.errors] == [
        "scenarios/s/scenario.yaml:4:31: error[E240]: negatives.empty.fails[0]: "
        "'out::test_x' names a test, but check 'out' is no pytest check"
    ]


def test_a_project_kind_wins_over_a_builtin_of_the_same_name() -> None:
    """A built-in added later (pytest) must not change what an existing project's checks mean."""
    plan = _plan(
        b"kind: scenario\nid: s\nchecks: [{ id: t, kind: pytest, path: tests }]\n",
        **{
            "specs/pytest.yaml": b"kind: check-kind\nid: pytest\nparams: { path: { type: string } }\n"
            b"run: 'python -m pytest -q {{ path }}'\n"
        },
    )
    (check,) = plan.validated.scenarios["s"].job.checks  # type: ignore[attr-defined]
    assert (check.kind, check.source_kind, check.params["run"]) == (
        "command",
        "pytest",
        "python -m pytest -q tests",
    )
