"""aider, for real, against the scripted model server (Chat Completions, echo mode)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from harness.modelserver import ScriptedModelServer
from tests.adapters.helpers import Serve, Trial, cli_trial, server_totals, totals

pytestmark = pytest.mark.agents

EDIT = """app.py
```python
<<<<<<< SEARCH
    return "hello"
=======
    return "hi"
>>>>>>> REPLACE
```

hello.txt
```
<<<<<<< SEARCH
=======
hi
>>>>>>> REPLACE
```
"""
SCRIPT = {"step_mode": "echo", "tools_required": False, "steps": [{"text": EDIT}]}


def trial(server: ScriptedModelServer, workspace: Path, tmp_path: Path, **kw: Any) -> Trial:
    args = {"max_retries": 1, "files": ["app.py"], **kw.pop("args", {})}
    return cli_trial("aider", server, workspace, tmp_path, args=args, **kw)


def test_changes_files_and_usage_matches_server(model_server: Serve, workspace: Path, tmp_path: Path) -> None:
    server = model_server(SCRIPT)
    result = trial(server, workspace, tmp_path)
    assert result.returncode == 0, result.stderr
    assert (workspace / "hello.txt").read_text().strip() == "hi"
    assert 'return "hi"' in (workspace / "app.py").read_text()
    usage = result.usage()
    assert len(usage) == len(server.records()) == 1
    assert totals(usage) == server_totals(server.records())
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=workspace, capture_output=True, text=True, check=True
    ).stdout
    assert {line[3:] for line in status.splitlines()} == {"app.py", "hello.txt"}  # no .aider* droppings
    edits = [e.input for e in result.transcript() if e.type == "tool_call"]
    assert edits == [{"path": "app.py"}, {"path": "hello.txt"}]
    info = result.info()
    assert (info.agent, info.infra_failure) == ("aider", None)
    assert info.version and info.version[0].isdigit()


def test_reflection_round(model_server: Serve, workspace: Path, tmp_path: Path) -> None:
    wrong = EDIT.replace('return "hello"', 'return "nope"', 1).split("\nhello.txt")[0]
    server = model_server(
        {
            "step_mode": "echo",
            "tools_required": False,
            "steps": [{"text": "First try.\n" + wrong}, {"text": "Second try.\n" + EDIT}],
        }
    )
    result = trial(server, workspace, tmp_path)
    assert result.returncode == 0, result.stderr
    assert 'return "hi"' in (workspace / "app.py").read_text()
    assert [r.step for r in server.records()] == [0, 1]
    assert totals(result.usage()) == server_totals(server.records())


@pytest.mark.parametrize("status", [529, 500])
def test_provider_error_exits_75(model_server: Serve, workspace: Path, tmp_path: Path, status: int) -> None:
    server = model_server(
        {
            "step_mode": "echo",
            "tools_required": False,
            "steps": [{"error": {"status": status, "message": "Overloaded"}}],
        }
    )
    result = trial(server, workspace, tmp_path)
    assert result.returncode == 75, result.stderr
    assert "retries" in (result.info().infra_failure or "")


def test_giving_up_is_an_ordinary_result(model_server: Serve, workspace: Path, tmp_path: Path) -> None:
    server = model_server(
        {"step_mode": "echo", "tools_required": False, "steps": [{"text": "I won't change anything."}]}
    )
    result = trial(server, workspace, tmp_path)
    assert result.returncode in (0, 1)
    assert not (workspace / "hello.txt").exists()
    assert result.info().infra_failure is None
