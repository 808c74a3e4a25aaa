from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.modelserver import Script, ScriptedModelServer


@pytest.fixture
def model_server(tmp_path: Path) -> Iterator[Callable[[dict[str, Any]], ScriptedModelServer]]:
    servers: list[ScriptedModelServer] = []

    def start(raw: dict[str, Any], log_bodies: bool = False) -> ScriptedModelServer:
        server = ScriptedModelServer(
            Script.model_validate(raw), log_path=tmp_path / "model.jsonl", log_bodies=log_bodies
        )
        server.start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A small git repo with one Python file."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "app.py").write_text('def greet():\n    return "hello"\n')
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    subprocess.run([*git, "-C", str(ws), "add", "."], check=True)
    subprocess.run([*git, "-C", str(ws), "commit", "-qm", "seed"], check=True)
    return ws
