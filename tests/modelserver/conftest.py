from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.modelserver import Script, ScriptedModelServer


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[[dict[str, Any]], ScriptedModelServer]]:
    servers: list[ScriptedModelServer] = []

    def start(raw: dict[str, Any]) -> ScriptedModelServer:
        server = ScriptedModelServer(Script.model_validate(raw), log_path=tmp_path / "log.jsonl")
        server.start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()
