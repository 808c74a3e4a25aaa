"""opencode, for real, against the scripted model server (OpenAI-compatible Chat Completions)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.modelserver import ScriptedModelServer
from tests.adapters.helpers import Serve, Trial, cli_trial, server_totals, totals

pytestmark = pytest.mark.agents


def bash(text: str, command: str) -> dict[str, Any]:
    return {
        "text": text,
        "tool_calls": [{"name": "bash", "arguments": {"command": command, "description": "run"}}],
    }


SCRIPT = {
    "steps": [
        bash("Creating hello.txt.", "printf 'hi\\n' > hello.txt"),
        bash("Editing app.py.", "sed -i 's/hello/hi/' app.py"),
        {"text": "Done: hello.txt created and greet() returns hi."},
    ]
}


def trial(server: ScriptedModelServer, workspace: Path, tmp_path: Path, **kw: Any) -> Trial:
    return cli_trial("opencode", server, workspace, tmp_path, **kw)


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
    assert [e.tool for e in events if e.type == "tool_call"] == ["bash", "bash"]
    assert [e.exit_code for e in events if e.type == "tool_result"] == [0, 0]
    info = result.info()
    assert (info.agent, info.infra_failure) == ("opencode", None)
    assert info.version and info.version[0].isdigit()


@pytest.mark.parametrize("status", [529, 500])
def test_provider_error_exits_75(model_server: Serve, workspace: Path, tmp_path: Path, status: int) -> None:
    server = model_server({"steps": [{"error": {"status": status, "message": "overloaded"}}]})
    result = trial(server, workspace, tmp_path)
    assert result.returncode == 75, (
        result.stderr[-1500:],
        (tmp_path / "run/opencode.stdout").read_text()[-1500:],
    )


def test_giving_up_is_an_ordinary_result(model_server: Serve, workspace: Path, tmp_path: Path) -> None:
    server = model_server({"steps": [{"text": "I give up on this task."}]})
    result = trial(server, workspace, tmp_path)
    assert result.returncode in (0, 1)
    assert not (workspace / "hello.txt").exists()
    assert result.info().infra_failure is None
