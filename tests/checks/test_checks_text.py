from __future__ import annotations

from pathlib import Path
from typing import Any

from checks_util import write

from compiler.contract import CheckSpec, ScenarioJob
from harness.artifacts.records import CheckOutcome
from harness.checks import CheckContext, run_check


def check(kind: str, ws: Path, **params: Any) -> CheckOutcome:
    return run_check(CheckSpec(id="t", kind=kind, params=params), ws, CheckContext())


SRC = {
    "app/main.py": "def handler(event):\n    return event\n\n\ndef handler_v2(event):\n    print(event)\n",
    "app/util.py": "# TODO: remove\nprint('x')\n",
}


def test_contains_text_alternatives(ws: Path) -> None:
    write(ws, SRC)
    assert check("contains", ws, file="app/main.py", text="def handler(").outcome == "pass"
    assert check("contains", ws, file="app/main.py", text=["def nope(", "return event"]).outcome == "pass"
    out = check("contains", ws, file="app/main.py", text=["def nope("])
    assert out.outcome == "fail" and "found 0 time(s), expected at least 1" in out.message


def test_contains_min_max(ws: Path) -> None:
    write(ws, SRC)
    assert check("contains", ws, file="app/main.py", text="def handler", min=2).outcome == "pass"
    assert check("contains", ws, file="app/main.py", text="def handler", min=3).outcome == "fail"
    out = check("contains", ws, file="app/main.py", text="def handler", max=1)
    assert out.outcome == "fail" and "app/main.py:1" in out.message and "app/main.py:5" in out.message


def test_contains_regex_and_case(ws: Path) -> None:
    write(ws, SRC)
    assert check("contains", ws, file="app/main.py", regex=r"^def handler\(").outcome == "pass"
    assert check("contains", ws, file="app/main.py", regex=r"^\s+print\(", min=1, max=1).outcome == "pass"
    assert check("contains", ws, file="app/main.py", text="DEF HANDLER(").outcome == "fail"
    assert check("contains", ws, file="app/main.py", text="DEF HANDLER(", ignore_case=True).outcome == "pass"


def test_globs_and_missing_files_fail(ws: Path) -> None:
    write(ws, SRC)
    assert check("contains", ws, files="app/**/*.py", text="print(", min=2).outcome == "pass"
    assert check("contains", ws, files="**/*.py", text="TODO").outcome == "pass"
    gone = check("contains", ws, file="app/gone.py", text="x")
    assert gone.outcome == "fail" and "app/gone.py does not exist" in gone.message
    nothing = check("absent", ws, files="lib/*.py", text="x")
    assert nothing.outcome == "fail" and "no file matches lib/*.py" in nothing.message


def test_bad_parameters_are_errors(ws: Path) -> None:
    write(ws, SRC)
    both = check("contains", ws, file="app/main.py", text="x", regex="y")
    assert both.outcome == "error" and "exactly one of text or regex" in both.message
    bad = check("contains", ws, file="app/main.py", regex="(")
    assert bad.outcome == "error" and "bad regex" in bad.message
    escape = check("contains", ws, file="../outside.py", text="x")
    assert escape.outcome == "error" and "stay inside" in escape.message
    neither = check("absent", ws, text="x")
    assert neither.outcome == "error" and "needs file or files" in neither.message
    both_files = check("absent", ws, file="app/main.py", files="*.py", text="x")
    assert both_files.outcome == "error" and "not both" in both_files.message


def test_default_is_the_scenario_entry(ws: Path) -> None:
    """Seed 000's contains/absent read the entry's source text: no file parameter."""
    write(ws, SRC)
    scenario = ScenarioJob(
        id="s",
        root="scenarios/s",
        family="f",
        seed="scenarios/s/seed",
        prompt="p",
        checks=(),
        entry=("app/main.py", "app/util.py"),
    )
    ctx = CheckContext(scenario=scenario)
    spec = CheckSpec(id="t", kind="contains", params={"text": ["TODO"]})
    assert run_check(spec, ws, ctx).outcome == "pass"
    spec = CheckSpec(id="t", kind="absent", params={"text": ["def handler("]})
    out = run_check(spec, ws, ctx)
    assert out.outcome == "fail" and "app/main.py:1" in out.message


def test_absent(ws: Path) -> None:
    write(ws, SRC)
    assert check("absent", ws, file="app/main.py", text=["TODO", "FIXME"]).outcome == "pass"
    out = check("absent", ws, files="app/*.py", text=["TODO", "FIXME"])
    assert out.outcome == "fail" and "app/util.py:1" in out.message
    assert check("absent", ws, files="app/*.py", regex=r"print\(", max=2).outcome == "pass"
    assert check("absent", ws, files="app/*.py", regex=r"print\(", max=1).outcome == "fail"
