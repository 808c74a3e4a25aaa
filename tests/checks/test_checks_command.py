from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from compiler.contract import CheckSpec
from harness.artifacts.records import CheckOutcome
from harness.checks import CheckContext, run_check


def check(ws: Path, ctx: CheckContext | None = None, timeout_s: float = 30.0, **params: Any) -> CheckOutcome:
    spec = CheckSpec(id="c", kind="command", timeout_s=timeout_s, params=params)
    return run_check(spec, ws, ctx or CheckContext())


UNUSED = "import os\nimport sys\n\nprint(sys.argv)\n"
CLEAN = "import sys\n\nprint(sys.argv)\n"
LINT = "ruff check --no-cache --select F401 --output-format json ."


def test_exit_status_pass_and_fail(ws: Path) -> None:
    assert check(ws, run="true").outcome == "pass"
    failed = check(ws, run="echo boom >&2; exit 3")
    assert failed.outcome == "fail"
    assert "exited 3, expected 0" in failed.message and "boom" in failed.message
    assert check(ws, run="exit 3", exit=[0, 3]).outcome == "pass"
    assert check(ws, run="exit 1", result={"exit": 1}).outcome == "pass"


def test_argv_form_and_cwd(ws: Path) -> None:
    (ws / "sub").mkdir()
    (ws / "sub" / "f.txt").write_text("x")
    assert check(ws, run=["test", "-f", "f.txt"], cwd="sub").outcome == "pass"
    missing = check(ws, run="true", cwd="nope")
    assert missing.outcome == "error" and "nope" in missing.message
    assert check(ws, run="true", cwd="../x").outcome == "error"


def test_command_not_found_is_error(ws: Path) -> None:
    out = check(ws, run="definitely-not-a-command-xyz")
    assert out.outcome == "error"
    assert "not found" in out.message


def test_timeout_is_error_and_kills_the_group(ws: Path) -> None:
    marker = ws / "late"
    started = time.monotonic()
    out = check(ws, timeout_s=0.5, run=f"(sleep 2; touch {marker}) & sleep 30")
    assert out.outcome == "error"
    assert "timed out after 0.5s" in out.message
    assert time.monotonic() - started < 5
    time.sleep(2.5)
    assert not marker.exists(), "the backgrounded child outlived the timeout"


def test_context_timeout_caps_the_check(ws: Path) -> None:
    out = check(ws, CheckContext(timeout_s=0.3), timeout_s=30, run="sleep 5")
    assert out.outcome == "error" and "0.3s" in out.message


def test_environment(ws: Path, tmp_path: Path) -> None:
    ctx = CheckContext(seed=tmp_path, env={"PATH": os.environ["PATH"], "ONLY": "1"})
    out = check(
        ws,
        ctx,
        run='test "$BENCH_WORKSPACE" = "$PWD" && test "$BENCH_SEED" = "' + str(tmp_path) + '" '
        '&& test "$ONLY$EXTRA" = 1x && test -z "$HOME"',
        env={"EXTRA": "x"},
    )
    assert out.outcome == "pass", out.message


def test_checks_do_not_litter_the_workspace(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Empty means "write bytecode" to Python (nox sessions set it so): the check still must not.
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "")
    monkeypatch.setenv("RUFF_NO_CACHE", "")
    (ws / "m.py").write_text(UNUSED)
    check(ws, run="python -c 'import m'")
    check(ws, run=LINT, result={"count": {"json_path": "$", "max": 0}})
    assert sorted(p.name for p in ws.iterdir()) == ["m.py"]


def test_wrapper_is_applied(ws: Path) -> None:
    seen: list[list[str]] = []

    def wrap(argv: Any) -> list[str]:
        seen.append(list(argv))
        return ["env", "WRAPPED=yes", *argv]

    out = check(ws, CheckContext(wrap=wrap), run='test "$WRAPPED" = yes')
    assert out.outcome == "pass"
    assert seen and seen[0][-1] == 'test "$WRAPPED" = yes'


def test_count_reader_with_real_ruff(ws: Path) -> None:
    (ws / "app.py").write_text(UNUSED)
    reader = {"count": {"json_path": "$", "max": 0}}
    out = check(ws, run=LINT, result=reader)
    assert out.outcome == "fail"
    assert "1 found, expected at most 0" in out.message and "F401 app.py:1" in out.message
    assert check(ws, run=LINT, result={"count": {"json_path": "$", "max": 1}}).outcome == "pass"
    (ws / "app.py").write_text(CLEAN)
    assert check(ws, run=LINT, result=reader).outcome == "pass"


def test_count_reader_max_param_where_and_min(ws: Path) -> None:
    (ws / "app.py").write_text("import os\nimport json\nx = 1 ;y = 2\n")
    lint_all = "ruff check --no-cache --select F401,E702 --output-format json ."
    by_param = {"count": {"json_path": "$", "max_param": "max"}}
    assert check(ws, run=lint_all, result=by_param, max=3).outcome == "pass"
    assert check(ws, run=lint_all, result=by_param, max=2).outcome == "fail"
    where = {"count": {"json_path": "$[*]", "where": {"code": "F401"}, "max": 1}}
    out = check(ws, run=lint_all, result=where)
    assert out.outcome == "fail" and "2 found" in out.message
    at_least = {"count": {"json_path": "$", "min": 4}}
    assert check(ws, run=lint_all, result=at_least).outcome == "fail"
    missing_param = check(ws, run=lint_all, result=by_param)
    assert missing_param.outcome == "error" and "'max'" in missing_param.message


def test_count_of_a_number(ws: Path) -> None:
    doc = json.dumps({"summary": {"failed": 2}})
    out = check(ws, run=f"echo '{doc}'", result={"count": {"json_path": "$.summary.failed", "max": 0}})
    assert out.outcome == "fail" and "2 found" in out.message


def test_json_path_reader(ws: Path) -> None:
    doc = json.dumps({"ok": True, "items": [{"name": "a"}, {"name": "b"}]})
    run = f"echo '{doc}'"
    assert check(ws, run=run, result={"json_path": {"path": "$.ok", "equals": True}}).outcome == "pass"
    assert (
        check(ws, run=run, result={"json_path": {"path": "$.items[1].name", "equals": "b"}}).outcome == "pass"
    )
    wrong = check(ws, run=run, result={"json_path": {"path": "$.items[0].name", "equals": "b"}})
    assert wrong.outcome == "fail" and 'expected "b"' in wrong.message
    assert check(ws, run=run, result={"json_path": {"path": "$['ok']", "matches": "^tr"}}).outcome == "pass"
    assert check(ws, run=run, result={"json_path": {"path": "$.ok", "equals": 1}}).outcome == "fail"
    gone = check(ws, run=run, result={"json_path": {"path": "$.nope", "equals": 1}})
    assert gone.outcome == "fail" and "missing" in gone.message
    bad = check(ws, run=run, result={"json_path": {"path": "ok", "equals": 1}})
    assert bad.outcome == "error" and "must start with '$'" in bad.message


def test_unreadable_result_is_error(ws: Path) -> None:
    out = check(ws, run="echo not json; exit 2", result={"count": {"json_path": "$", "max": 0}})
    assert out.outcome == "error"
    assert "no JSON result" in out.message and "exit 2" in out.message


def test_result_from_a_file(ws: Path) -> None:
    reader = {"source": "report.json", "json_path": {"path": "$.n", "equals": 3}}
    assert check(ws, run="echo '{\"n\": 3}' > report.json", result=reader).outcome == "pass"
    (ws / "report.json").unlink()
    out = check(ws, run="true", result=reader)
    assert out.outcome == "error" and "left no result file report.json" in out.message


def test_result_reader_with_exit_gate(ws: Path) -> None:
    reader = {"exit": 0, "json_path": {"path": "$.n", "equals": 3}}
    out = check(ws, run="echo '{\"n\": 3}'; exit 1", result=reader)
    assert out.outcome == "fail" and "exited 1" in out.message


def test_a_result_nested_too_deeply_to_parse_is_an_error_with_its_reason(ws: Path) -> None:
    """The command runs the agent's code, which chooses what it prints: `[[[[...` is no crash."""
    out = check(ws, run="python3 -c \"print('[' * 100000)\"", result={"count": {"json_path": "$", "max": 0}})
    assert out.outcome == "error" and "nested too deeply" in out.message
