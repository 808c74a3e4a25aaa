"""Real agent CLIs as trials under bwrap and unshare, network off, their model (the scripted
server) behind the gateway: Claude Code (Anthropic Messages), Codex (OpenAI Responses) and
mini-swe-agent (OpenAI Chat Completions).

Needs the CLIs installed by `nox -s agents` (skips with the reason otherwise).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from compiler.contract import AgentSpec, Canaries, Cell, Limits, Options, Provisions
from harness.gateway import read_log
from harness.modelserver import Script, ScriptedModelServer
from harness.trial import run_trial
from tests.adapters.helpers import agent_cache, require_cli
from tests.helpers import FIXTURE, make_job
from tests.isolation.conftest import require

pytestmark = [pytest.mark.isolation, pytest.mark.agents]

PROBE = "curl -s -m 2 --noproxy '*' http://127.0.0.1:9/ || echo offline > app/net.txt"
"""What the scripted agent runs: a request to a loopback port (nothing off the machine, ever)."""
AGENTS = {
    "claude_code": (
        "/model/v1/messages",
        {
            "steps": [
                {
                    "text": "I'll create hello.txt.",
                    "tool_calls": [
                        {
                            "name": "Write",
                            "arguments": {"file_path": "{{cwd}}/app/hello.txt", "content": "hi\n"},
                        }
                    ],
                },
                {
                    "text": "Now a command.",
                    "tool_calls": [{"name": "Bash", "arguments": {"command": PROBE, "description": "probe"}}],
                },
                {"text": "Created app/hello.txt."},
            ]
        },
    ),
    "codex": (
        "/model/v1/responses",
        {
            "steps": [
                {
                    "text": "Creating hello.txt.",
                    "tool_calls": [
                        {"name": "exec_command", "arguments": {"cmd": "printf 'hi\\n' > app/hello.txt"}}
                    ],
                },
                {
                    "text": "Now a command.",
                    "tool_calls": [{"name": "exec_command", "arguments": {"cmd": PROBE}}],
                },
                {"text": "Created app/hello.txt."},
            ]
        },
    ),
    "mini_swe_agent": (
        "/model/v1/chat/completions",
        {
            "steps": [
                {
                    "text": "Creating hello.txt.",
                    "tool_calls": [
                        {"name": "bash", "arguments": {"command": "printf 'hi\\n' > app/hello.txt"}}
                    ],
                },
                {"text": "Now a command.", "tool_calls": [{"name": "bash", "arguments": {"command": PROBE}}]},
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
    ),
}


@pytest.fixture(params=sorted(AGENTS))
def adapter(request: pytest.FixtureRequest) -> str:
    require_cli(request.param)
    return str(request.param)


@pytest.fixture
def model(tmp_path: Path, adapter: str) -> Iterator[ScriptedModelServer]:
    script = Script.model_validate(AGENTS[adapter][1])
    with ScriptedModelServer(script, log_path=tmp_path / "model.jsonl") as server:
        yield server


@pytest.mark.parametrize("iso", ["bwrap", "unshare"])
def test_agent_trial_behind_the_gateway(
    tmp_path: Path, model: ScriptedModelServer, adapter: str, iso: str
) -> None:
    require(iso)
    project = tmp_path / "project"
    shutil.copytree(FIXTURE, project, symlinks=True)
    (project / ".cache" / "agents").mkdir(parents=True)
    (project / ".cache" / "agents" / adapter).symlink_to(agent_cache().resolve())
    port = model.url.rsplit(":", 1)[1]
    canary = f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2)\""
    cell = Cell(
        name="none/none/off",
        levels={"tool": "none", "knowledge": "none", "network": "off"},
        provisions=Provisions(canaries=Canaries(must_fail=(canary,), network="off")),
    )
    agent = AgentSpec(
        id=adapter, adapter=adapter, model="scripted-model", args={"base_url": model.url, "max_retries": 0}
    )
    job = make_job(
        agent=agent, cell=cell, options=Options(isolation=iso, infra_retries=0), limits=Limits(timeout_s=180)
    )
    run_dir = tmp_path / "run"
    record = run_trial(job, project=project, run_dir=run_dir)
    log_tail = (run_dir / "agent.log").read_text(errors="replace")[-3000:]
    assert record.error is None and record.exit_code == 0, log_tail
    assert record.isolation == iso and record.invalid is None
    assert [c.ok for c in record.canaries] == [True, True]  # neither reached the host's loopback
    assert (run_dir / "workspace" / "app" / "hello.txt").read_text() == "hi\n"
    assert (run_dir / "workspace" / "app" / "net.txt").read_text() == "offline\n"
    log = read_log(run_dir / "gateway.jsonl")
    assert log and all(r.allowed for r in log), log
    assert {r.path.split("?")[0] for r in log if r.method == "POST"} == {AGENTS[adapter][0]}
    assert {r.method for r in log} <= {"POST", "HEAD"}  # HEAD: Claude Code's probe of its base URL
    served = model.records()
    totals = record.extra["gateway"]
    assert totals["input_tokens"] + totals["cache_read_tokens"] == sum(r.input_tokens for r in served)
    assert totals["output_tokens"] == sum(r.output_tokens for r in served)
    assert totals["refused"] == 0
