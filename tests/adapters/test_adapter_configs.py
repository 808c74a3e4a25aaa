"""What each adapter tells its CLI for a cell's treatments (web, MCP servers, skill dir), read
back from the generated config files and command lines (fast; no CLI needed)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from adapters import claude_code, codex, gemini_cli, opencode
from adapters._common import A, AgentArgs, read_bench
from adapters._run import Trial

MCP = json.dumps({"docs": {"command": ["docs-server", "--stdio"], "env": {"TOKEN": "t"}}})


def trial(tmp_path: Path, args: A, knowledge: str = "none", key: str = "key", **env: str) -> Trial[A]:
    """A trial as the shared run hands it to an adapter: a guide, an MCP server, one knowledge level."""
    skill = tmp_path / "guide"
    skill.mkdir(exist_ok=True)
    (skill / "guide.md").write_text("Use the tool.\n")
    bench = read_bench(
        {
            "BENCH_RUN_DIR": str(tmp_path / "run"),
            "BENCH_KNOWLEDGE": knowledge,
            "BENCH_SKILL_DIR": str(skill),
            "BENCH_MCP_SERVERS": MCP,
            **env,
        },
        prompt="p",
    )
    made = Trial(bench, args, Path("/bin/cli"), key)
    made.home.mkdir(parents=True, exist_ok=True)
    return made


def test_codex_config(tmp_path: Path) -> None:
    config = tomllib.loads(
        codex.config_toml(trial(tmp_path, codex.CodexArgs(base_url="http://127.0.0.1:5/", max_retries=1)))
    )
    assert config["model_provider"] == "assay"
    provider = config["model_providers"]["assay"]
    assert (provider["base_url"], provider["wire_api"], provider["request_max_retries"]) == (
        "http://127.0.0.1:5/v1",
        "responses",
        1,
    )
    assert config["analytics"] == {"enabled": False} and config["features"] == {"plugins": False}
    assert config["web_search"] == "disabled"
    assert config["mcp_servers"]["docs"] == {
        "command": "docs-server",
        "args": ["--stdio"],
        "env": {"TOKEN": "t"},
    }
    web = tomllib.loads(codex.config_toml(trial(tmp_path, codex.CodexArgs(), "web")))
    assert web["web_search"] == "live" and "model_providers" not in web


def test_claude_code_argv(tmp_path: Path) -> None:
    argv = claude_code.build_argv(trial(tmp_path, claude_code.ClaudeArgs(max_turns=7)))
    assert argv[argv.index("--disallowedTools") + 1 : argv.index("--disallowedTools") + 3] == [
        "WebFetch",
        "WebSearch",
    ]
    assert argv[argv.index("--max-turns") + 1] == "7"
    config = json.loads(Path(argv[argv.index("--mcp-config") + 1]).read_text())
    assert config["mcpServers"]["docs"] == {
        "type": "stdio",
        "command": "docs-server",
        "args": ["--stdio"],
        "env": {"TOKEN": "t"},
    }
    assert "--strict-mcp-config" in argv
    web = claude_code.build_argv(trial(tmp_path, claude_code.ClaudeArgs(), "web"))
    assert "--disallowedTools" not in web
    args = claude_code.ClaudeArgs(base_url="http://h:1", auth_token=True)
    env = claude_code.build_env(trial(tmp_path, args, key="sk-ant-scripted"))
    assert env["ANTHROPIC_AUTH_TOKEN"] == "sk-ant-scripted" and "ANTHROPIC_API_KEY" not in env
    assert (
        env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1" and env["ANTHROPIC_BASE_URL"] == "http://h:1"
    )


def test_gemini_settings(tmp_path: Path) -> None:
    data = gemini_cli.settings(trial(tmp_path, AgentArgs()))
    assert data["privacy"] == {"usageStatisticsEnabled": False} and data["telemetry"] == {"enabled": False}
    assert data["tools"] == {"exclude": gemini_cli.WEB_TOOLS}
    assert data["mcpServers"]["docs"]["command"] == "docs-server"
    assert "tools" not in gemini_cli.settings(trial(tmp_path, AgentArgs(), "web"))
    assert "tools" not in gemini_cli.settings(
        trial(tmp_path, AgentArgs(), BENCH_ADAPTER_OPTIONS='{"web": true}')
    )


def test_opencode_config(tmp_path: Path) -> None:
    data = opencode.config(trial(tmp_path, AgentArgs(model="m1", base_url="http://127.0.0.1:5")))
    provider = data["provider"]["assay"]
    assert provider["options"] == {"baseURL": "http://127.0.0.1:5/v1", "apiKey": "key"}
    assert data["model"] == "assay/m1" and "m1" in provider["models"]
    assert data["permission"]["webfetch"] == "deny"
    assert data["mcp"]["docs"] == {
        "type": "local",
        "command": ["docs-server", "--stdio"],
        "environment": {"TOKEN": "t"},
        "enabled": True,
    }
    assert data["instructions"] == [str(tmp_path / "guide" / "guide.md")]
