"""Each real CLI through the real runner (`assay run --job-file`) and grader (`assay grade`):
the trial changes the workspace as the script directs, is graded passed, and its usage.jsonl
totals equal what the scripted model server logged; a scripted 529 once makes the adapter exit
75 and the runner retry, a 529 every time is failed_to_run after the retries (the gateway saw it);
an agent that gives up is an ordinary failure, not a retry.

The isolation is the runner's own choice (`auto`: bwrap, else unshare, else none); under a real
isolation the model server sits behind the runner's gateway.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from adapters.schema import UsageRow
from compiler.contract import AgentSpec, CheckSpec, Limits, Options
from harness.modelserver import Script, ScriptedModelServer
from tests.adapters.helpers import ROOT, agent_cache, require_cli
from tests.helpers import FIXTURE, assay_argv, make_job

pytestmark = pytest.mark.agents

DROP = "sed -i '/^import os$/d' app/main.py"
AIDER_EDIT = "app/main.py\n```python\n<<<<<<< SEARCH\nimport os\n\n\n=======\n>>>>>>> REPLACE\n```\n"


def _shell(tool: str, key: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "steps": [
            {
                "text": "Removing the unused import.",
                "tool_calls": [{"name": tool, "arguments": {key: DROP, **(extra or {})}}],
            },
            {"text": "Removed the unused import."},
        ]
    }


CASES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "claude_code": (
        _shell("Bash", "command", {"description": "edit"}),
        {},
    ),
    "codex": (_shell("exec_command", "cmd"), {}),
    "mini_swe_agent": (
        {
            "steps": [
                {"text": "Removing.", "tool_calls": [{"name": "bash", "arguments": {"command": DROP}}]},
                {
                    "text": "Submitting.",
                    "tool_calls": [
                        {
                            "name": "bash",
                            "arguments": {"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"},
                        }
                    ],
                },
            ]
        },
        {},
    ),
    "aider": (
        {"step_mode": "echo", "tools_required": False, "steps": [{"text": AIDER_EDIT}]},
        {"files": ["app/main.py"]},
    ),
    "gemini_cli": (_shell("run_shell_command", "command"), {}),
    "opencode": (_shell("bash", "command", {"description": "edit"}), {}),
}
CHECKS = (
    CheckSpec(id="compiles", kind="command", params={"run": "python3 -m py_compile app/main.py"}),
    CheckSpec(
        id="import-removed",
        kind="command",
        params={"run": "python3 -c \"import sys; sys.exit('import os' in open('app/main.py').read())\""},
    ),
)


def trial(
    adapter: str,
    tmp_path: Path,
    script: dict[str, Any],
    *,
    args: dict[str, Any] | None = None,
    codes: tuple[int, ...] = (0,),
) -> tuple[dict[str, Any], dict[str, Any], Path, ScriptedModelServer]:
    _, extra = CASES[adapter]
    require_cli(adapter)
    project = tmp_path / "project"
    shutil.copytree(FIXTURE, project, symlinks=True)
    (project / ".cache" / "agents").mkdir(parents=True)
    (project / ".cache" / "agents" / adapter).symlink_to(agent_cache().resolve())
    with ScriptedModelServer(Script.model_validate(script), log_path=tmp_path / "model.jsonl") as server:
        agent = AgentSpec(
            id=adapter,
            adapter=adapter,
            model="scripted-model",
            args={"base_url": server.url, "max_retries": 0, **extra, **(args or {})},
        )
        job = make_job(
            agent=agent,
            options=Options(isolation=os.environ.get("ASSAY_E2E_ISOLATION", "auto"), infra_retries=1),
            limits=Limits(timeout_s=240),
        )
        job = job.model_copy(update={"scenario": job.scenario.model_copy(update={"checks": CHECKS})})
        job_file = tmp_path / "job.json"
        job_file.write_text(job.model_dump_json())
        # short: the gateway's Unix socket lives in the run dir (AF_UNIX paths stop at 107 bytes)
        runs = Path(tempfile.mkdtemp(prefix="ae", dir="/tmp"))
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        done = subprocess.run(
            assay_argv(project, "run", "--runs", runs, "--job-file", job_file),
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
            cwd=ROOT,
        )
        assert done.returncode in codes, done.stderr[-3000:]
    (run_json,) = runs.rglob("run.json")
    subprocess.run(
        [sys.executable, "-m", "harness", "grade", str(run_json.parent)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd=ROOT,
    )
    record = json.loads(run_json.read_text())
    grade = json.loads((run_json.parent / "grade.json").read_text())
    kept = tmp_path / "run"
    shutil.copytree(run_json.parent, kept, symlinks=True, ignore=shutil.ignore_patterns("*.sock"))
    shutil.rmtree(runs, ignore_errors=True)
    return record, grade, kept, server


@pytest.mark.parametrize("adapter", sorted(CASES))
def test_trial_passes_and_usage_matches_the_server(adapter: str, tmp_path: Path) -> None:
    record, grade, run_dir, server = trial(adapter, tmp_path, CASES[adapter][0])
    log = (run_dir / "agent.log").read_text(errors="replace")[-2000:]
    assert (record["exit_code"], record["error"], record["invalid"]) == (0, None, None), log
    assert grade["passed"] is True, grade
    assert "import os" not in (run_dir / "workspace" / "app" / "main.py").read_text()
    rows = [UsageRow.model_validate_json(x) for x in (run_dir / "usage.jsonl").read_text().splitlines()]
    served = [r for r in server.records() if r.kind in ("main", "side", "exhausted")]
    assert rows and len(rows) == len(served)
    assert sum(r.input + r.cache_read + r.cache_write for r in rows) == sum(r.input_tokens for r in served)
    assert sum(r.output for r in rows) == sum(r.output_tokens for r in served)
    metrics = record["metrics"]
    assert metrics["output_tokens"] == sum(r.output_tokens for r in served)
    assert record["agent_version"] == json.loads((run_dir / "agent.json").read_text())["version"]
    assert record["infra_retries"] == 0


@pytest.mark.parametrize("adapter", ["claude_code", "codex"])
def test_overloaded_once_is_retried_by_the_runner(adapter: str, tmp_path: Path) -> None:
    script = json.loads(json.dumps(CASES[adapter][0]))
    script["steps"][0]["error"] = {
        "status": 529,
        "type": "overloaded_error",
        "message": "Overloaded",
        "times": 1,
    }
    record, grade, _, server = trial(adapter, tmp_path, script)
    assert record["infra_retries"] == 1
    assert record["exit_code"] == 0
    assert grade["passed"] is True
    assert [r.status for r in server.records() if r.kind in ("main", "error")][:2] == [529, 200]


@pytest.mark.parametrize("adapter", ["claude_code", "codex"])
def test_overloaded_every_time_fails_to_run_after_the_retries(adapter: str, tmp_path: Path) -> None:
    """The provider keeps answering 529: the adapter exits 75 each attempt, and after the retries the
    run is failed_to_run because the gateway's own log shows those answers. Without a gateway
    (isolation none) nothing on the harness's side shows them: the exit is the agent's claim, graded."""
    script = json.loads(json.dumps(CASES[adapter][0]))
    script["steps"][0]["error"] = {"status": 529, "type": "overloaded_error", "message": "Overloaded"}
    record, grade, _, _ = trial(adapter, tmp_path, script, codes=(0, 1))  # 1: a trial that failed to run
    assert record["infra_retries"] == 1 and record["exit_code"] == 75
    if record["isolation"] == "none":
        assert record["agent_end"]["cause"] == "claimed_infra" and grade["status"] == "graded"
    else:
        assert "the model gateway saw" in record["error"] and "529" in record["error"]
        assert grade["status"] == "failed_to_run"


def test_giving_up_is_graded_not_retried(tmp_path: Path) -> None:
    record, grade, run_dir, _ = trial("claude_code", tmp_path, {"steps": [{"text": "I won't do that."}]})
    assert record["infra_retries"] == 0
    assert record["exit_code"] in (0, 1)
    assert grade["passed"] is False
    assert "import os" in (run_dir / "workspace" / "app" / "main.py").read_text()
