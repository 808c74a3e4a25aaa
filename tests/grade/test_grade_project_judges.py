"""The project's `judges:` end to end: refused before any trial when misconfigured, used when not."""

from __future__ import annotations

import json
from pathlib import Path

from harness.artifacts.records import read_grade
from harness.artifacts.run_tree import find_runs
from harness.modelserver import Script, ScriptedModelServer, read_log
from tests.grade.project import AGENT, MATRIX, PROJECT, compile_project
from tests.helpers import BARE_ENV, assay

# The agent fixes the function and leaves a transcript for the judge to read.
AGENT_SCRIPT = """\
echo "started trial $BENCH_TRIAL" >> {marker}
printf 'def handler(x):\\n    return x + 1\\n' > app/main.py
printf '{{"t": 1.0, "type": "message", "role": "assistant", "text": "handler now adds one"}}\\n' > "$BENCH_TRANSCRIPT"
"""
SCENARIO = """\
kind: scenario
id: add-one
family: arith
language: python
split: test
entry: app/main.py
writable: ["app/**"]
prompt: prompt.md
checks:
  - { id: keeps-api, kind: contains, file: app/main.py, text: ["def handler("] }
  - { id: explains, kind: judge, rubric: "The agent says what it changed." }
negatives:
  drops-handler: { fails: [keeps-api] }
"""


def _project(root: Path, judges: str) -> tuple[Path, Path]:
    marker = root / "starts.log"
    files = {
        "specs/project.yaml": PROJECT + judges,
        "specs/agents/marker.yaml": AGENT.format(agent=root.resolve() / "agent.sh"),
        "agent.sh": AGENT_SCRIPT.format(marker=marker),
        "specs/matrices/default.yaml": MATRIX.format(trials=1),
        "scenarios/add-one/scenario.yaml": SCENARIO,
        "scenarios/add-one/prompt.md": "Make handler add one to its argument.\n",
        "scenarios/add-one/seed/app/main.py": "def handler(x):\n    return x\n",
        "scenarios/add-one/reference/app/main.py": "def handler(x):\n    return x + 1\n",
        "scenarios/add-one/negatives/drops-handler/app/main.py": "def other(x):\n    return x + 1\n",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    compile_project(root)
    return root, marker


def test_misconfigured_judge_stops_the_matrix_before_any_trial(tmp_path: Path) -> None:
    judges = "judges:\n  default: { provider: anthropic, model: m, base_url: 'http://127.0.0.1:9', api_key_env: ASSAY_TEST_NO_SUCH_KEY }\n"
    project, marker = _project(tmp_path, judges)
    done = assay("--project", project, "matrix", cwd=project, env=BARE_ENV)
    assert done.returncode == 2, done.stderr
    assert "default:" in done.stderr and "ASSAY_TEST_NO_SUCH_KEY" in done.stderr
    assert not marker.exists()  # no agent started
    assert not (project / "runs").exists() or find_runs(project / "runs") == []


def test_the_projects_judge_grades_the_matrix(tmp_path: Path) -> None:
    answer = json.dumps({"passed": True, "reason": "It says handler now adds one."})
    script = Script.model_validate(
        {"step_mode": "counter", "tools_required": False, "steps": [{"text": answer}]}
    )
    with ScriptedModelServer(script, log_path=tmp_path / "judge.jsonl") as server:
        judges = (
            "judges:\n"
            f"  default: {{ provider: anthropic, model: judge-m, base_url: '{server.url}', api_key: k, retries: 0 }}\n"
        )
        project, marker = _project(tmp_path / "p", judges)
        done = assay("--project", project, "matrix", cwd=project, env=BARE_ENV)
        assert done.returncode == 0, done.stderr
    assert marker.read_text().count("started") == 1
    (run_dir,) = find_runs(project / "runs")
    grade = read_grade(run_dir)
    assert grade is not None
    said = {c.id: c for c in grade.checks}["explains"]
    assert said.outcome == "pass" and said.message.endswith("It says handler now adds one.")
    (request,) = read_log(tmp_path / "judge.jsonl")
    assert request.input_tokens > 0  # the judge really asked the server, once
