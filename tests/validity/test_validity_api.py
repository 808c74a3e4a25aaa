"""harness.validity on hand-built scenarios: patches, run-reading checks, build failures."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from compiler.contract import CheckSpec, Negative, ScenarioJob
from harness.validity import validate


def scenario(
    root: Path, *, checks: tuple[CheckSpec, ...], negatives: tuple[Negative, ...] = ()
) -> ScenarioJob:
    base = root / "scenarios" / "s"
    (base / "seed").mkdir(parents=True)
    (base / "reference").mkdir()
    (base / "seed" / "todo.txt").write_text("status: open\n")
    (base / "reference" / "todo.txt").write_text("status: done\n")
    return ScenarioJob(
        id="s",
        root="scenarios/s",
        family="f",
        seed="scenarios/s/seed",
        reference="scenarios/s/reference",
        prompt="p",
        checks=checks,
        negatives=negatives,
    )


DONE = CheckSpec(id="done", kind="contains", params={"file": "todo.txt", "text": "status: done"})


def test_patch_negative_applies_on_top_of_the_reference(tmp_path: Path) -> None:
    patch = tmp_path / "scenarios" / "s" / "undo.patch"
    job = scenario(
        tmp_path,
        checks=(DONE,),
        negatives=(Negative(name="undo", fails=("done",), patch="scenarios/s/undo.patch"),),
    )
    patch.write_text("--- a/todo.txt\n+++ b/todo.txt\n@@ -1 +1 @@\n-status: done\n+status: open\n")
    report = validate([job], tmp_path, jobs=1)
    assert report.ok, [p.line() for p in report.problems]


def test_patch_that_does_not_apply_is_reported(tmp_path: Path) -> None:
    patch = tmp_path / "scenarios" / "s" / "bad.patch"
    job = scenario(
        tmp_path,
        checks=(DONE,),
        negatives=(Negative(name="bad", fails=("done",), patch="scenarios/s/bad.patch"),),
    )
    patch.write_text("--- a/todo.txt\n+++ b/todo.txt\n@@ -1 +1 @@\n-status: never\n+status: open\n")
    report = validate([job], tmp_path, jobs=1)
    [problem] = report.problems
    assert problem.kind == "setup" and problem.overlay == "negative bad"
    assert "bad.patch does not apply" in problem.line()


def test_run_reading_checks_are_listed_not_failed(tmp_path: Path) -> None:
    trace = CheckSpec(id="used-tool", kind="trace", params={"command": "ruff", "min": 1})
    job = scenario(tmp_path, checks=(DONE, trace), negatives=(Negative(name="n", fails=("done",), dir=None),))
    # the negative has neither overlay nor patch: it is the reference itself, so `done` passes
    report = validate([job], tmp_path, jobs=1)
    assert report.scenarios[0].not_validated == ("used-tool",)
    assert [p.line() for p in report.problems] == [
        "s [negative n] check done: passes, but the negative names it: it must fail"
    ]
    assert not report.uncovered


def test_a_check_that_cannot_run_is_reported_on_every_workspace(tmp_path: Path) -> None:
    broken = CheckSpec(id="lint", kind="command", params={"run": "no-such-linter-xyz ."})
    job = scenario(tmp_path, checks=(DONE, broken), negatives=(Negative(name="n", fails=("lint",)),))
    report = validate([job], tmp_path, jobs=2)
    lines = [p.line() for p in report.problems if p.kind == "error"]
    assert len(lines) == 3  # reference, seed, negative
    assert all(
        "check lint: could not run: `no-such-linter-xyz .`: command was not found" in line for line in lines
    )


def test_seed000_negatives_overlay_the_seed(tmp_path: Path) -> None:
    """scenario.json's negatives are overlays like the reference: the seed alone is under them."""
    from compiler.pipeline import build

    seed000 = Path(__file__).resolve().parents[1] / "fixtures" / "seed000"
    job = build(seed000).validated.scenarios["greet"].job
    assert validate([job], seed000, strict=True, jobs=1).ok
    # Laid on seed + reference (assay's own form), `answer-only` would pass the check it names.
    as_yaml = job.model_copy(
        update={"negatives": tuple(n.model_copy(update={"base": "reference"}) for n in job.negatives)}
    )
    lines = [p.line() for p in validate([as_yaml], seed000, jobs=1).problems]
    assert lines == [
        "greet [negative answer-only] check says-hello: passes, but the negative names it: it must fail"
    ]


SUITE = """\
import sys
from pathlib import Path


def test_done():
    assert "done" in Path("todo.txt").read_text()


def test_status_line():
    assert Path("todo.txt").read_text().startswith("status:")
"""


@pytest.mark.slow
def test_negatives_name_single_tests(tmp_path: Path) -> None:
    """`<check>::<test id>` fails that test (and so its check) while the check's other tests pass."""
    tests = CheckSpec(
        id="tests",
        kind="pytest",
        timeout_s=60,
        params={"tests": "test_todo.py", "python": sys.executable},
    )
    base = tmp_path / "scenarios" / "s"
    for name, text in (("undone", "status: open\n"), ("bare", "done\n"), ("wrong", "status: open\n")):
        (base / "negatives" / name).mkdir(parents=True)
        (base / "negatives" / name / "todo.txt").write_text(text)
    (base / "grader").mkdir(parents=True)
    (base / "grader" / "test_todo.py").write_text(SUITE)
    job = scenario(
        tmp_path,
        checks=(tests,),
        negatives=(
            Negative(
                name="undone", fails=("tests::test_todo.py::test_done",), dir="scenarios/s/negatives/undone"
            ),
            Negative(
                name="bare",
                fails=("tests::test_todo.py::test_status_line",),
                dir="scenarios/s/negatives/bare",
            ),
            Negative(
                name="wrong",
                fails=("tests::test_todo.py::test_status_line",),
                dir="scenarios/s/negatives/wrong",
            ),
        ),
    ).model_copy(update={"grader": "scenarios/s/grader"})
    report = validate([job], tmp_path, strict=True, jobs=1)
    assert [p.line() for p in report.problems] == [
        "s [negative wrong] check tests::test_todo.py::test_done: fails, but the negative does not name it: "
        "AssertionError: assert 'done' in 'status: open\\n'",
        "s [negative wrong] check tests::test_todo.py::test_status_line: passes, but the negative names it: it must fail",
    ]
