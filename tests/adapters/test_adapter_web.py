"""Web tools follow the cell: each CLI offers its model web tools only when BENCH_KNOWLEDGE=web
(read from the tools declared in the request the scripted server received)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.modelserver import ScriptedModelServer
from tests.adapters.helpers import require_cli, run_adapter

pytestmark = pytest.mark.agents
Serve = Callable[..., ScriptedModelServer]

CLIS = {
    "claude_code": {"WebFetch", "WebSearch"},
    "gemini_cli": {"google_web_search", "web_fetch"},
    "opencode": {"webfetch"},
}


def tool_names(adapter: str, body: dict[str, Any]) -> set[str]:
    tools = body.get("tools", [])
    if adapter == "gemini_cli":
        return {f["name"] for t in tools for f in t.get("functionDeclarations", [])}
    if adapter == "opencode":
        return {t["function"]["name"] for t in tools}
    return {t.get("name", "") for t in tools}


@pytest.mark.parametrize("knowledge", ["none", "web"])
@pytest.mark.parametrize("adapter", sorted(CLIS))
def test_web_tools_follow_the_knowledge_level(
    adapter: str, knowledge: str, model_server: Serve, workspace: Path, tmp_path: Path
) -> None:
    web_tools = CLIS[adapter]
    require_cli(adapter)
    server = model_server({"steps": [{"text": "ok"}]}, log_bodies=True)
    result = run_adapter(
        adapter,
        workspace=workspace,
        run_dir=tmp_path / "run",
        prompt="say ok",
        args={"base_url": server.url, "max_retries": 0},
        levels={"knowledge": knowledge},
    )
    assert result.returncode == 0, result.stderr
    (body,) = [json.loads(r.body or "{}") for r in server.records() if r.kind == "main"]
    offered = tool_names(adapter, body) & web_tools
    assert offered == (web_tools if knowledge == "web" else set())
