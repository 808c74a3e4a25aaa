"""Codex CLI, for real, against the scripted model server (Responses API)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from harness.modelserver import ScriptedModelServer
from tests.adapters.helpers import Serve, Trial, cli_trial, server_totals, totals

pytestmark = pytest.mark.agents


SCRIPT = {
    "steps": [
        {
            "text": "Creating hello.txt.",
            "tool_calls": [{"name": "exec_command", "arguments": {"cmd": "printf 'hi\\n' > hello.txt"}}],
        },
        {
            "text": "Editing app.py.",
            "tool_calls": [{"name": "exec_command", "arguments": {"cmd": "sed -i 's/hello/hi/' app.py"}}],
        },
        {"text": "Done: hello.txt created and greet() returns hi."},
    ]
}


def trial(server: ScriptedModelServer, workspace: Path, tmp_path: Path, **kw: Any) -> Trial:
    return cli_trial("codex", server, workspace, tmp_path, **kw)


def test_changes_files_and_usage_matches_server(model_server: Serve, workspace: Path, tmp_path: Path) -> None:
    server = model_server(SCRIPT)
    result = trial(server, workspace, tmp_path)
    assert result.returncode == 0, result.stderr
    assert (workspace / "hello.txt").read_text() == "hi\n"
    assert 'return "hi"' in (workspace / "app.py").read_text()
    usage = result.usage()
    assert len(usage) == 3
    assert totals(usage) == server_totals(server.records())
    events = result.transcript()
    calls = [e for e in events if e.type == "tool_call"]
    results = [e for e in events if e.type == "tool_result"]
    assert len(calls) == 2
    assert [r.exit_code for r in results] == [0, 0]
    assert not [e for e in events if e.type == "error"]
    info = result.info()
    assert (info.agent, info.infra_failure) == ("codex", None)
    assert info.version and info.version[0].isdigit()
    assert {r.protocol for r in server.records()} == {"responses"}


@pytest.mark.parametrize("status", [529, 500])
def test_provider_error_exits_75(model_server: Serve, workspace: Path, tmp_path: Path, status: int) -> None:
    server = model_server({"steps": [{"error": {"status": status, "message": "overloaded"}}]})
    result = trial(server, workspace, tmp_path)
    assert result.returncode == 75, (result.stderr, result.info())
    assert result.info().infra_failure


def test_giving_up_is_an_ordinary_result(model_server: Serve, workspace: Path, tmp_path: Path) -> None:
    server = model_server({"steps": [{"text": "I give up on this task."}]})
    result = trial(server, workspace, tmp_path)
    assert result.returncode in (0, 1)
    assert not (workspace / "hello.txt").exists()
    assert result.info().infra_failure is None


def test_skill_dir_becomes_agents_md(model_server: Serve, workspace: Path, tmp_path: Path) -> None:
    guide = tmp_path / "guide"
    guide.mkdir()
    (guide / "README.md").write_text("Always run the linter.\n")
    server = model_server({"steps": [{"text": "ok"}]})
    result = trial(server, workspace, tmp_path, extra_env={"BENCH_SKILL_DIR": str(guide)})
    assert result.returncode == 0, result.stderr
    assert [(i.kind, i.name) for i in result.context().loaded] == [("skill", "guide")]
    assert "Always run the linter." in (tmp_path / "run/home/.codex/AGENTS.md").read_text()
    rollouts = list((tmp_path / "run/home/.codex/sessions").rglob("rollout-*.jsonl"))
    assert any("Always run the linter." in p.read_text() for p in rollouts)  # it reached the model


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
                    "tool_calls": [{"name": "lookup", "namespace": "mcp__docs", "arguments": {"q": "greet"}}],
                },
                {"text": "Found it."},
            ]
        }
    )
    result = trial(server, workspace, tmp_path, extra_env={"BENCH_MCP_SERVERS": json.dumps(servers)})
    assert result.returncode == 0, result.stderr
    assert "tools/call" in mcp_log.read_text()
    calls = [e for e in result.transcript() if e.type == "tool_call"]
    assert calls and "ANSWER-42 for greet" in json.dumps(calls[-1].input)


@pytest.mark.parametrize(("knowledge", "offered"), [("none", False), ("web", True)])
def test_web_search_tool_follows_the_knowledge_level(
    model_server: Serve, workspace: Path, tmp_path: Path, knowledge: str, offered: bool
) -> None:
    server = model_server({"steps": [{"text": "ok"}]}, log_bodies=True)
    result = trial(server, workspace, tmp_path, levels={"knowledge": knowledge})
    assert result.returncode == 0, result.stderr
    tools = json.loads(server.records()[-1].body or "{}")["tools"]
    assert any(t.get("type") == "web_search" for t in tools) is offered
