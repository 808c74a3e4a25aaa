from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from compiler.contract import CheckSpec
from harness.artifacts.records import CheckOutcome
from harness.checks import CheckContext, run_check


def check(ws: Path, ctx: CheckContext | None = None, **params: Any) -> CheckOutcome:
    return run_check(CheckSpec(id="a", kind="answer", params=params), ws, ctx or CheckContext())


def answer(ws: Path, doc: Any) -> None:
    (ws / "answer.json").write_text(json.dumps(doc))


def test_equals(ws: Path) -> None:
    answer(ws, {"culprit": " app/db.py ", "count": 3, "flags": {"safe": False}, "files": ["a", "b"]})
    assert check(ws, key="culprit", equals="app/db.py").outcome == "pass"
    assert check(ws, key="count", equals=3).outcome == "pass"
    assert check(ws, key="flags.safe", equals=False).outcome == "pass"
    assert check(ws, key="files.1", equals="b").outcome == "pass"
    wrong = check(ws, key="count", equals=4)
    assert wrong.outcome == "fail" and "count = 3, expected 4" in wrong.message
    # a boolean is not a number, whatever Python thinks of True == 1
    answer(ws, {"flag": True})
    assert check(ws, key="flag", equals=1).outcome == "fail"


def test_matches(ws: Path) -> None:
    answer(ws, {"culprit": "app/db.py", "line": 42})
    assert check(ws, key="culprit", matches=r"db\.py$").outcome == "pass"
    assert check(ws, key="line", matches=r"^4\d$").outcome == "pass"
    assert check(ws, key="culprit", matches=r"^app/api").outcome == "fail"
    assert check(ws, key="culprit", matches="(").outcome == "error"


def test_no_answer_fails(ws: Path) -> None:
    out = check(ws, key="x", equals=1)
    assert out.outcome == "fail" and "answer.json was not written" in out.message
    (ws / "answer.json").write_text("{not json")
    assert check(ws, key="x", equals=1).outcome == "fail"
    answer(ws, {"y": 1})
    missing = check(ws, key="x", equals=1)
    assert missing.outcome == "fail" and "no key 'x'" in missing.message


def test_an_answer_nested_too_deeply_to_parse_fails_and_crashes_nothing(ws: Path) -> None:
    (ws / "answer.json").write_text("[" * 100_000)
    out = check(ws, key="x", equals=1)
    assert out.outcome == "fail" and "not valid JSON" in out.message


def test_answer_location(ws: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "out" / "answer.json"
    elsewhere.parent.mkdir()
    elsewhere.write_text(json.dumps({"x": 1}))
    assert check(ws, CheckContext(answer_file=elsewhere), key="x", equals=1).outcome == "pass"
    (ws / "result.json").write_text(json.dumps({"x": 2}))
    assert check(ws, file="result.json", key="x", equals=2).outcome == "pass"


def test_needs_an_expectation(ws: Path) -> None:
    answer(ws, {"x": 1})
    out = check(ws, key="x")
    assert out.outcome == "error" and "equals or matches" in out.message
