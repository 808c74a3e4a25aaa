"""mini-swe-agent, for real, against the scripted model server (Chat Completions)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.modelserver import ScriptedModelServer
from tests.adapters.helpers import Serve, Trial, cli_trial, server_totals, totals

pytestmark = pytest.mark.agents


def bash(text: str, command: str) -> dict[str, Any]:
    return {"text": text, "tool_calls": [{"name": "bash", "arguments": {"command": command}}]}


SCRIPT = {
    "steps": [
        bash("Creating hello.txt.", "printf 'hi\\n' > hello.txt"),
        bash("Editing app.py.", "sed -i 's/hello/hi/' app.py"),
        bash("Submitting.", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"),
    ]
}


def trial(server: ScriptedModelServer, workspace: Path, tmp_path: Path, **kw: Any) -> Trial:
    return cli_trial("mini_swe_agent", server, workspace, tmp_path, **kw)


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
    assert next(e.input for e in events if e.type == "tool_call") == {"command": "printf 'hi\\n' > hello.txt"}
    assert [e.exit_code for e in events if e.type == "tool_result"][:2] == [0, 0]
    info = result.info()
    assert (info.agent, info.infra_failure, info.version) == ("mini_swe_agent", None, info.version)
    assert info.version and info.version[0].isdigit()


def test_text_mode(model_server: Serve, workspace: Path, tmp_path: Path) -> None:
    fence = "```mswea_bash_command\n{}\n```"
    server = model_server(
        {
            "tools_required": False,
            "steps": [
                {"text": "Creating.\n" + fence.format("printf 'hi\\n' > hello.txt")},
                {"text": "Done.\n" + fence.format("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")},
            ],
        }
    )
    result = trial(server, workspace, tmp_path, args={"text_mode": True})
    assert result.returncode == 0, result.stderr
    assert (workspace / "hello.txt").read_text() == "hi\n"
    assert totals(result.usage()) == server_totals(server.records())


@pytest.mark.parametrize("status", [529, 500])
def test_provider_error_exits_75(model_server: Serve, workspace: Path, tmp_path: Path, status: int) -> None:
    server = model_server({"steps": [{"error": {"status": status, "message": "overloaded"}}]})
    result = trial(server, workspace, tmp_path)
    assert result.returncode == 75, (result.stderr, (tmp_path / "run/mini.stdout").read_text()[-2000:])


def test_giving_up_is_an_ordinary_failure(model_server: Serve, workspace: Path, tmp_path: Path) -> None:
    server = model_server({"exhausted_text": "I give up.", "steps": []})
    result = trial(server, workspace, tmp_path, args={"max_turns": 3})
    assert result.returncode == 1, result.stderr
    assert not (workspace / "hello.txt").exists()
    assert result.info().infra_failure is None
