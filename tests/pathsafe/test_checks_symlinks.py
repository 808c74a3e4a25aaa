"""Checks judge the agent's work, not files its symlinks point at (the reference, /etc/shadow)."""

from __future__ import annotations

from pathlib import Path

from compiler.contract import CheckSpec
from harness.checks import CheckContext, run_checks


def _layout(tmp_path: Path) -> Path:
    ref = tmp_path / "reference" / "main.py"
    ref.parent.mkdir()
    ref.write_text("def handler():\n    return 42  # SOLVED\n")
    ws = tmp_path / "ws"
    (ws / "app").mkdir(parents=True)
    (ws / "app" / "main.py").symlink_to(ref)
    (ws / "answer.json").symlink_to(tmp_path / "reference" / "answer.json")
    (tmp_path / "reference" / "answer.json").write_text('{"value": 42}')
    (ws / "app" / "own.py").write_text("x = 1\n")
    (ws / "app" / "alias.py").symlink_to("own.py")
    return ws


def test_symlink_to_the_reference_cannot_pass_a_check(tmp_path: Path) -> None:
    ws = _layout(tmp_path)
    checks = (
        CheckSpec(id="solved", kind="contains", params={"file": "app/main.py", "text": "SOLVED"}),
        CheckSpec(id="solved_glob", kind="contains", params={"files": "app/*.py", "text": "SOLVED"}),
        CheckSpec(id="answer", kind="answer", params={"file": "answer.json", "key": "value", "equals": 42}),
        CheckSpec(id="answer_default", kind="answer", params={"key": "value", "equals": 42}),
    )
    outcomes = {o.id: o for o in run_checks(checks, ws, CheckContext())}
    assert all(o.outcome != "pass" for o in outcomes.values()), {
        k: (o.outcome, o.message) for k, o in outcomes.items()
    }
    assert "symlink out of" in outcomes["solved"].message
    assert "def handler" not in " ".join(o.message for o in outcomes.values())


def test_symlink_inside_the_workspace_still_counts(tmp_path: Path) -> None:
    ws = _layout(tmp_path)
    check = CheckSpec(id="alias", kind="contains", params={"file": "app/alias.py", "text": "x = 1"})
    (outcome,) = run_checks((check,), ws, CheckContext())
    assert outcome.outcome == "pass", outcome.message
