"""harness.validity on hand-built scenarios: patches, run-reading checks, build failures."""

from __future__ import annotations

from pathlib import Path

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
