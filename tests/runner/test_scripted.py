"""The scripted agent as a real process: seeded choices, conditions on what the cell provides."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from compiler.contract import AgentSpec
from harness.artifacts.store import read_plain
from harness.modelserver import Script, ScriptedModelServer
from harness.trial import run_trial
from tests.helpers import bin_cell, make_job, none_cell

ROOT = Path(__file__).resolve().parents[2]


def _agent(
    tmp_path: Path,
    script: dict[str, Any],
    *,
    trial: int = 1,
    path: str = "/usr/bin:/bin",
    args: dict[str, Any] | None = None,
) -> tuple[int, str]:
    env = {
        "PATH": path,
        "BENCH_AGENT_ARGS": json.dumps({"script_inline": script, **(args or {})}),
        "BENCH_TRIAL": str(trial),
        "BENCH_SCENARIO": "s",
        "BENCH_TRANSCRIPT": str(tmp_path / "transcript.jsonl"),
        "BENCH_USAGE": str(tmp_path / "usage.jsonl"),
        "BENCH_ANSWER": str(tmp_path / "answer.json"),
        "BENCH_TOOL": "bin",
        "PYTHONPATH": str(ROOT),
    }
    done = subprocess.run(
        [sys.executable, "-m", "adapters.scripted"],
        input=b"prompt",
        cwd=tmp_path,
        env=env,
        capture_output=True,
        check=False,
    )
    return done.returncode, done.stdout.decode() + done.stderr.decode()


@pytest.mark.slow
def test_seeded_choices_are_repeatable_and_vary_by_trial(tmp_path: Path) -> None:
    script = {"seed": 3, "steps": [{"when": {"chance": "$skill"}, "answer": {"ok": True}}]}
    outcomes = []
    for trial in range(1, 41):
        (tmp_path / "answer.json").unlink(missing_ok=True)
        code, _ = _agent(tmp_path, script, trial=trial, args={"skill": 0.5})
        assert code == 0
        outcomes.append((tmp_path / "answer.json").exists())
    assert 0 < sum(outcomes) < 40
    again = []
    for trial in (1, 2, 3, 4, 5):
        (tmp_path / "answer.json").unlink(missing_ok=True)
        _agent(tmp_path, script, trial=trial, args={"skill": 0.5})
        again.append((tmp_path / "answer.json").exists())
    assert again == outcomes[:5]


def test_conditions_actions_and_reports(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("hello world\n")
    script = {
        "steps": [
            {"when": {"on_path": "sh"}, "edit": {"path": "f.txt", "old": "world", "new": "there"}},
            {"when": {"not_on_path": "sh"}, "write": {"path": "never.txt", "content": "x"}},
            {"when": {"level": {"tool": "bin"}}, "write": {"path": "d/new.txt", "content": "n"}},
            {"run": "exit 4"},
            {"when": {"last_exit": 4}, "append": {"path": "f.txt", "content": "four\n"}},
            {"choose": [{"weight": 1, "steps": [{"say": "picked"}]}, {"weight": 0, "steps": [{"exit": 9}]}]},
            {"exit": 3},
            {"write": {"path": "after-exit.txt", "content": "x"}},
        ]
    }
    code, out = _agent(tmp_path, script)
    assert code == 3, out
    assert (tmp_path / "f.txt").read_text() == "hello there\nfour\n"
    assert (tmp_path / "d" / "new.txt").exists()
    assert not (tmp_path / "never.txt").exists() and not (tmp_path / "after-exit.txt").exists()
    assert "picked" in out
    usage = (tmp_path / "usage.jsonl").read_text().splitlines()
    transcript = [json.loads(line) for line in (tmp_path / "transcript.jsonl").read_text().splitlines()]
    assert len(usage) == len(transcript) >= 5
    assert [t["type"] for t in transcript][:2] == ["prompt", "edit"]


def test_unknown_condition_is_a_script_error(tmp_path: Path) -> None:
    code, out = _agent(tmp_path, {"steps": [{"when": {"sunny": True}, "say": "x"}]})
    assert code == 2 and "unknown condition 'sunny'" in out


def test_behaviour_depends_on_the_cell(project: Path, tmp_path: Path) -> None:
    script = project / "scripts" / "cell.yaml"
    script.write_text(
        yaml.safe_dump(
            {
                "steps": [
                    {"when": {"on_path": "mytool"}, "run": "mytool fix"},
                    {"when": {"on_path": "mytool"}, "read_trace": {}},
                    {
                        "when": {"trace_has": "mytool"},
                        "edit": {"path": "app/main.py", "old": "import os\n", "new": ""},
                    },
                ]
            }
        )
    )
    agent = AgentSpec(id="cell", adapter="scripted", args={"script": "scripts/cell.yaml"})
    with_tool = run_trial(make_job(agent=agent, cell=bin_cell()), project=project, run_dir=tmp_path / "bin")
    without = run_trial(make_job(agent=agent, cell=none_cell()), project=project, run_dir=tmp_path / "none")
    assert with_tool.error is None and without.error is None
    assert "-import os" in (tmp_path / "bin" / "diff.patch").read_text()
    assert (tmp_path / "none" / "diff.patch").read_text() == ""
    events = [json.loads(x) for x in (tmp_path / "bin" / "transcript.jsonl").read_text().splitlines()]
    assert any(e["type"] == "read_trace" and e["invocations"] == 1 for e in events)
    assert os.path.exists(tmp_path / "bin" / "trace.jsonl") and not os.path.exists(
        tmp_path / "none" / "trace.jsonl"
    )


def test_a_script_without_steps_for_the_scenario_fails_to_run_never_as_the_agent(
    project: Path, tmp_path: Path
) -> None:
    """A job edited past the compiler (E237): the trial fails to run with the reason, it is not
    an idle agent graded as a failure; the scenario's own script wins over the project's."""
    from harness.grade import grade_run

    (project / "scripts" / "other.yaml").write_text(yaml.safe_dump({"scenarios": {"other": []}}))
    agent = AgentSpec(id="idle", adapter="scripted", args={"script": "scripts/other.yaml"})
    record = run_trial(make_job(agent=agent), project=project, run_dir=tmp_path / "idle")
    assert record.error is not None and "no script steps for scenario 'fix'" in record.error
    grade = grade_run(tmp_path / "idle", project=project)
    assert grade.status == "failed_to_run" and "no script steps" in (grade.error or "")

    own = project / "scenarios" / "fix" / "scripted" / "good.yaml"
    own.parent.mkdir()
    own.write_text(yaml.safe_dump({"steps": [{"write": {"path": "app/main.py", "content": "x = 1\n"}}]}))
    both = AgentSpec(
        id="own",
        adapter="scripted",
        args={"script": "scripts/other.yaml", "scenario_script": "scripted/good.yaml"},
    )
    done = run_trial(make_job(agent=both), project=project, run_dir=tmp_path / "own")
    assert done.error is None and "+x = 1" in (tmp_path / "own" / "diff.patch").read_text()


@pytest.mark.parametrize("protocol", ["anthropic", "chat", "responses", "gemini"])
def test_ask_speaks_each_protocol_and_reports_the_models_usage(tmp_path: Path, protocol: str) -> None:
    script = Script.model_validate({"model": "m1", "tools_required": False, "steps": [{"text": "Fine."}]})
    with ScriptedModelServer(script) as server:
        steps = [{"repeat": {"times": 2, "steps": [{"ask": "go"}]}}, {"answer": {"done": True}}]
        code, out = _agent(tmp_path, {"steps": steps}, args={"base_url": server.url, "protocol": protocol})
        served = server.records()
    assert code == 0, out
    assert [r.protocol for r in served] == [protocol, protocol]
    rows = [json.loads(line) for line in (tmp_path / "usage.jsonl").read_text().splitlines()]
    asked = [
        r for r in rows if r["input"] == served[0].input_tokens and r["output"] == served[0].output_tokens
    ]
    assert len(asked) == 2  # the model's own counts, not made-up ones


def test_ask_stops_on_a_refusal_unless_told_to_go_on(tmp_path: Path) -> None:
    error = {"status": 429, "type": "insufficient_quota", "message": "quota"}
    script = Script.model_validate({"tools_required": False, "steps": [{"error": error}] * 3})
    with ScriptedModelServer(script) as server:
        args = {"base_url": server.url, "protocol": "chat"}
        code, out = _agent(tmp_path, {"steps": [{"ask": "go"}, {"answer": {"after": True}}]}, args=args)
        assert code == 1 and "model error 429" in out and not (tmp_path / "answer.json").exists()
        go_on = [{"ask": {"text": "go", "on_error": "continue"}}, {"answer": {"after": True}}]
        code, _ = _agent(tmp_path, {"steps": go_on}, args=args)
        assert code == 0 and (tmp_path / "answer.json").exists()


def test_a_script_is_read_again_once_it_changes_and_each_caller_owns_its_copy(tmp_path: Path) -> None:
    path = tmp_path / "script.yaml"
    path.write_text("steps: [a, b]\nnetwork: off\n")
    first = read_plain(path)
    assert first == {"steps": ["a", "b"], "network": False}  # as yaml.safe_load reads it (YAML 1.1)
    first["steps"].append("mine")
    assert read_plain(path)["steps"] == ["a", "b"]
    path.write_text("steps: [a, b, c]\n")  # another version: another size
    assert read_plain(path) == {"steps": ["a", "b", "c"]}
