"""Each section of grade.json on a run built to trigger it: snapshots, usage and cost, context,
authorities, lint, the judge. Those read from the agent's logs are in test_grade_evidence.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.artifacts.records import RunStatus
from harness.grade import JudgeConfigError, check_judge_config, grade_run
from harness.modelserver import Script, ScriptedModelServer, read_log
from tests.grade.helpers import (
    BROKEN_PY,
    COMPILES,
    T0,
    VALID_PY,
    check,
    command,
    demo_job,
    handler_project,
    make_run,
    scenario,
)


def test_snapshots_valid_then_invalid(tmp_path: Path) -> None:
    project = handler_project(tmp_path)
    snaps = [(10, "app/main.py", BROKEN_PY), (20, "app/main.py", VALID_PY), (30, "app/main.py", BROKEN_PY)]
    usage = [
        {"t": 5, "input": 100, "output": 10},
        {"t": 15, "input": 200, "output": 20},
        {"t": 25, "input": 400, "output": 40},
    ]
    scen = scenario([COMPILES, check("stays-valid", "snapshot", max_regressions=0)])
    run = make_run(
        tmp_path / "run", demo_job(scen), workspace={"app/main.py": BROKEN_PY}, snapshots=snaps, usage=usage
    )
    g = grade_run(run, project=project)
    s = g.snapshots
    assert s.count == 3 and s.authority == "python"
    assert [v.valid for v in s.verdicts] == [False, True, False]
    assert s.first_valid == 1 and s.regressions == (2,) and s.final_valid is False
    assert g.usage.tokens_to_first_valid == 100 + 10 + 200 + 20
    outcome = {c.id: c for c in g.checks}["stays-valid"]
    assert outcome.outcome == "fail" and "regression" in outcome.message


def test_a_version_the_runner_did_not_keep_is_neither_valid_nor_invalid(tmp_path: Path) -> None:
    """A version over the size a snapshot keeps has a row and no copy: no state holding it is
    rebuilt (its verdict is None, with why); the next kept version is assessed again."""
    project = handler_project(tmp_path)
    snaps = [(10, "app/main.py", BROKEN_PY), (30, "app/main.py", VALID_PY)]
    scen = scenario([COMPILES, check("entry-ok", "snapshot")])
    run = make_run(tmp_path / "run", demo_job(scen), workspace={"app/main.py": VALID_PY}, snapshots=snaps)
    with (run / "snapshots" / "index.jsonl").open("a") as fh:
        fh.write(
            json.dumps(
                {"t": T0 + 20, "index": 3, "file": "app/main.py", "bytes": 1 << 30, "omitted": "too big"}
            )
        )
    s = grade_run(run, project=project).snapshots
    assert [(v.valid, v.message) for v in s.verdicts] == [
        (False, s.verdicts[0].message),
        (None, "app/main.py: version not kept (too big)"),
        (True, ""),
    ]
    assert s.first_valid == 2 and s.regressions == ()


def test_snapshot_without_writes_and_without_authority(tmp_path: Path) -> None:
    project = handler_project(tmp_path)
    scen = scenario([COMPILES, check("entry-ok", "snapshot")])
    g = grade_run(
        make_run(tmp_path / "a", demo_job(scen), workspace={"app/main.py": VALID_PY}), project=project
    )
    assert {c.id: c.outcome for c in g.checks}["entry-ok"] == "fail"  # never wrote the entry
    assert g.snapshots.count == 0 and g.snapshots.first_valid is None
    plain = scenario([check("has", "contains", file="app/main.py", text="handler")])
    g2 = grade_run(
        make_run(
            tmp_path / "b",
            demo_job(plain),
            workspace={"app/main.py": VALID_PY},
            snapshots=[(1, "app/main.py", VALID_PY)],
        ),
        project=project,
    )
    assert g2.snapshots.count == 1 and g2.snapshots.verdicts == () and g2.snapshots.authority is None


def test_usage_cost_from_pinned_prices_not_the_agent(tmp_path: Path) -> None:
    prices = (
        "kind: prices\nversion: test-1\nmodels:\n  model-a: { input: 2.0, output: 10.0, cache_read: 0.5 }\n"
    )
    project = handler_project(tmp_path, prices)
    usage = [
        {"t": 1, "input": 1000, "output": 100, "cache_read": 5000, "context": 6000, "context_limit": 200000},
        {"t": 2, "input": 2000, "output": 300, "reasoning": 50, "context": 9000, "context_limit": 200000},
    ]
    scen = scenario([COMPILES])
    run = make_run(
        tmp_path / "run",
        demo_job(scen, model="model-a-2026-01-01"),
        workspace={"app/main.py": VALID_PY},
        usage=usage,
    )
    u = grade_run(run, project=project).usage
    assert (u.turns, u.input, u.output, u.cache_read, u.reasoning) == (2, 3000, 400, 5000, 50)
    assert u.peak_context == 9000 and u.peak_context_share == 0.045
    assert u.cost_usd == round((3000 * 2.0 + 400 * 10.0 + 5000 * 0.5) / 1e6, 6)
    assert u.price_table == "test-1" and u.model == "model-a-2026-01-01"
    unpriced = make_run(
        tmp_path / "r2", demo_job(scen, model="other"), workspace={"app/main.py": VALID_PY}, usage=usage
    )
    u2 = grade_run(unpriced, project=project).usage
    assert u2.cost_usd is None and "not priced" in (u2.price_table or "")
    none = grade_run(
        make_run(tmp_path / "r3", demo_job(scen), workspace={"app/main.py": VALID_PY}), project=project
    ).usage
    assert not none.present and none.turns is None  # no usage is not zero usage


def test_a_run_naming_no_model_is_priced_as_its_usage_rows_say(tmp_path: Path) -> None:
    # The scripted agent's case: no model in the spec, `model` in every usage row.
    prices = "kind: prices\nversion: test-1\nmodels:\n  scripted: { input: 1.0, output: 2.0 }\n"
    project = handler_project(tmp_path, prices)
    rows = [{"t": 1, "input": 1000, "output": 100, "model": "scripted"}, {"t": 2, "input": 500, "output": 50}]
    scen = scenario([COMPILES])
    named = make_run(tmp_path / "a", demo_job(scen), workspace={"app/main.py": VALID_PY}, usage=rows[:1])
    u = grade_run(named, project=project).usage
    assert u.cost_usd == round((1000 * 1.0 + 100 * 2.0) / 1e6, 6) and u.model == "scripted"
    # A row that names no model leaves the run unpriced rather than guessed at.
    partly = make_run(tmp_path / "b", demo_job(scen), workspace={"app/main.py": VALID_PY}, usage=rows)
    u2 = grade_run(partly, project=project).usage
    assert u2.cost_usd is None and "names no model" in (u2.price_table or "")
    # The run's own model wins over what the rows claim (the agent writes the rows).
    claimed = [{**rows[0], "model": "scripted"}]
    spec = make_run(
        tmp_path / "c", demo_job(scen, model="other"), workspace={"app/main.py": VALID_PY}, usage=claimed
    )
    u3 = grade_run(spec, project=project).usage
    assert u3.cost_usd is None and "model other is not priced" in (u3.price_table or "")


def test_unexpected_context_is_advisory(tmp_path: Path) -> None:
    """The agent writes context.json: what it names is shown in the grade, never makes the run invalid."""
    project = handler_project(tmp_path)
    scen = scenario([COMPILES])
    ok = make_run(
        tmp_path / "a",
        demo_job(scen, skill="guides/x"),
        workspace={"app/main.py": VALID_PY},
        context=["/runs/t1/skill/GUIDE.md", "app/main.py"],
    )
    g = grade_run(ok, project=project)
    assert g.context.present and g.context.unexpected == () and g.invalid is None
    bad = make_run(
        tmp_path / "b",
        demo_job(scen),
        workspace={"app/main.py": VALID_PY},
        context=["/home/u/.claude/CLAUDE.md"],
    )
    g2 = grade_run(bad, project=project)
    assert g2.context.unexpected == ("/home/u/.claude/CLAUDE.md",)
    assert g2.invalid is None and g2.status is RunStatus.GRADED and g2.passed


def test_two_authorities_disagree(tmp_path: Path) -> None:
    project = handler_project(tmp_path)
    strict = command(
        "strict-ok",
        "! grep -q 'x + 1' app/main.py || { echo 'style: x + 1 is banned'; exit 1; }",
        authority="styler",
    )
    scen = scenario([COMPILES, strict])
    g = grade_run(
        make_run(tmp_path / "run", demo_job(scen), workspace={"app/main.py": VALID_PY}), project=project
    )
    assert g.authorities["python"].status == "valid" and g.authorities["styler"].status == "invalid"
    (d,) = g.disagreement
    assert (d.accepts, d.rejects, d.direction) == ("python", "styler", "python accepts, styler rejects")
    assert "banned" in d.rejects_diagnostics


def test_missing_authority_fails_explicitly(tmp_path: Path) -> None:
    project = handler_project(tmp_path)
    scen = scenario(
        [command("oracle", "no-such-oracle-binary app/main.py", authority="oracle", layer="engine")]
    )
    g = grade_run(
        make_run(tmp_path / "run", demo_job(scen), workspace={"app/main.py": VALID_PY}), project=project
    )
    (c,) = g.checks
    assert c.outcome == "fail" and c.message.startswith("authority oracle unavailable")
    assert g.authorities["oracle"].status == "unavailable" and not g.passed
    assert g.failed_layers == ("engine",)


def test_lint_findings_make_a_pass_unusable(tmp_path: Path) -> None:
    project = handler_project(tmp_path)
    emit = 'echo \'[{"code": "F401"}, {"code": "E501"}]\''
    lint = command("lint", emit, result={"count": {"json_path": "$", "max": 5}})
    g = grade_run(
        make_run(tmp_path / "run", demo_job(scenario([lint])), workspace={"app/main.py": VALID_PY}),
        project=project,
    )
    assert g.passed and not g.usable
    (f,) = g.lint_findings
    assert (f.check, f.count, f.severity) == ("lint", 2, "error")


def test_judge_off_failing_and_verbatim(tmp_path: Path) -> None:
    project = handler_project(tmp_path)
    scen = scenario([COMPILES, check("explains", "judge", rubric="The agent explains its change.")])
    transcript = [{"role": "assistant", "text": "I changed handler to add one."}]

    def run(name: str, judge: Any) -> Any:
        r = make_run(
            tmp_path / name, demo_job(scen), workspace={"app/main.py": VALID_PY}, transcript=transcript
        )
        return grade_run(r, project=project, judge=judge)

    off = run("off", None)
    assert {c.id: c.outcome for c in off.checks}[
        "explains"
    ] == "unavailable" and off.passed  # excused, never a pass
    answer = '{"passed": false, "reason": "It never said why."}'
    steps = [{"text": answer}, {"error": {"status": 400, "message": "bad request"}}]
    script = Script.model_validate({"step_mode": "counter", "tools_required": False, "steps": steps})
    with ScriptedModelServer(script, log_path=tmp_path / "judge.jsonl") as server:
        judges = check_judge_config(
            {
                "default": {
                    "provider": "anthropic",
                    "model": "judge-m",
                    "base_url": server.url,
                    "api_key": "k",
                    "retries": 0,
                }
            }
        )
        no = run("no", judges)
        broken = run("broken", judges)
    said = {c.id: c for c in no.checks}["explains"]
    assert said.outcome == "fail" and said.message.endswith(": It never said why.") and not no.passed
    (first, _) = read_log(tmp_path / "judge.jsonl")
    assert first.input_tokens > 0
    failed = {c.id: c for c in broken.checks}
    assert failed["explains"].outcome == "unavailable" and "HTTP 400" in failed["explains"].message
    assert failed["compiles"].outcome == "pass" and broken.passed  # the rest of the grade stands


def test_misconfigured_judge_fails_up_front(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ASSAY_TEST_NO_SUCH_KEY", raising=False)
    with pytest.raises(JudgeConfigError) as err:
        check_judge_config(
            {
                "a": {
                    "provider": "anthropic",
                    "model": "m",
                    "base_url": "http://127.0.0.1:9",
                    "api_key_env": "ASSAY_TEST_NO_SUCH_KEY",
                },
                "b": {"provider": "gemini", "model": "m", "api_key": "k"},
                "c": {"provider": "openai", "model": "m", "base_url": "ftp://x", "api_key": "k"},
            }
        )
    message = str(err.value)
    assert "a:" in message and "ASSAY_TEST_NO_SUCH_KEY" in message and "b:" in message and "c:" in message
