"""Claude Code, for real, against the scripted model server."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from harness.modelserver import ScriptedModelServer
from tests.adapters.helpers import Serve, Trial, cli_trial, server_totals, totals

pytestmark = pytest.mark.agents

WRITE_THEN_BASH = {
    "steps": [
        {
            "text": "I'll create hello.txt.",
            "tool_calls": [
                {"name": "Write", "arguments": {"file_path": "{{cwd}}/hello.txt", "content": "hi\n"}}
            ],
        },
        {
            "text": "Now the greeting.",
            "tool_calls": [
                {
                    "name": "Bash",
                    "arguments": {"command": "sed -i 's/hello/hi/' app.py", "description": "edit"},
                }
            ],
        },
        {"text": "Created hello.txt and changed greet()."},
    ]
}


def trial(server: ScriptedModelServer, workspace: Path, tmp_path: Path, **kw: Any) -> Trial:
    return cli_trial("claude_code", server, workspace, tmp_path, **kw)


def test_changes_files_and_usage_matches_server(model_server: Serve, workspace: Path, tmp_path: Path) -> None:
    server = model_server(WRITE_THEN_BASH)
    result = trial(server, workspace, tmp_path)
    assert result.returncode == 0, result.stderr
    assert (workspace / "hello.txt").read_text() == "hi\n"
    assert 'return "hi"' in (workspace / "app.py").read_text()
    usage = result.usage()
    assert len(usage) == 3
    assert totals(usage) == server_totals(server.records())
    assert all(r.context_limit and r.context == r.input for r in usage)
    calls = [e for e in result.transcript() if e.type == "tool_call"]
    assert [c.tool for c in calls] == ["Write", "Bash"]
    outputs = {e.call_id: e.output for e in result.transcript() if e.type == "tool_result"}
    assert calls[0].call_id in outputs
    info = result.info()
    assert (info.agent, info.model, info.infra_failure) == ("claude_code", "scripted-model", None)
    assert info.version and info.version[0].isdigit()
    assert {r.kind for r in server.records()} <= {"main", "other"}  # no side traffic


@pytest.mark.parametrize("status", [529, 500])
def test_provider_error_exits_75(model_server: Serve, workspace: Path, tmp_path: Path, status: int) -> None:
    server = model_server(
        {"steps": [{"error": {"status": status, "type": "overloaded_error", "message": "Overloaded"}}]}
    )
    result = trial(server, workspace, tmp_path)
    assert result.returncode == 75, result.stderr
    assert f"{status}" in (result.info().infra_failure or "")
    assert [r.status for r in server.records() if r.protocol == "anthropic"] == [status]


def test_giving_up_is_an_ordinary_result(model_server: Serve, workspace: Path, tmp_path: Path) -> None:
    server = model_server({"steps": [{"text": "I can't do this task."}]})
    result = trial(server, workspace, tmp_path)
    assert result.returncode in (0, 1)
    assert result.returncode != 75
    assert not (workspace / "hello.txt").exists()
    assert result.info().infra_failure is None


def test_skill_dir_mcp_and_web_treatments(model_server: Serve, workspace: Path, tmp_path: Path) -> None:
    skills = tmp_path / "guide"
    skills.mkdir()
    (skills / "tool.md").write_text("Use the tool.\n")
    server = model_server({"steps": [{"text": "Read the guide."}]})
    result = trial(server, workspace, tmp_path, extra_env={"BENCH_SKILL_DIR": str(skills)})
    assert result.returncode == 0, result.stderr
    loaded = result.context().loaded
    assert [(i.kind, i.name) for i in loaded] == [("skill", "guide")]
    init = json.loads((tmp_path / "run" / "claude.stdout").read_text().splitlines()[0])
    assert "guide" in init["skills"]
    assert "WebFetch" not in init["tools"]


def test_mcp_server_from_the_cell_is_started_and_used(
    model_server: Serve, workspace: Path, tmp_path: Path
) -> None:
    mcp_log = tmp_path / "mcp.jsonl"
    server_cmd = [sys.executable, str(Path(__file__).with_name("mcp_lookup.py"))]
    servers = {"docs": {"command": server_cmd, "env": {"MCP_LOG": str(mcp_log)}}}
    server = model_server(
        {
            "steps": [
                {
                    "text": "Looking it up.",
                    "tool_calls": [{"name": "mcp__docs__lookup", "arguments": {"q": "greet"}}],
                },
                {"text": "Found it."},
            ]
        }
    )
    result = trial(server, workspace, tmp_path, extra_env={"BENCH_MCP_SERVERS": json.dumps(servers)})
    assert result.returncode == 0, result.stderr
    outputs = [e.output for e in result.transcript() if e.type == "tool_result"]
    assert outputs == ["ANSWER-42 for greet"]
    assert ("mcp_server", "docs", "treatment") in [
        (i.kind, i.name, i.source) for i in result.context().loaded
    ]
    assert "tools/call" in mcp_log.read_text()
