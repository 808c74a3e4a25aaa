"""Claude Code adapter: `python -m adapters.claude_code` (prompt on stdin, cwd = workspace).

Runs `claude -p --output-format stream-json --verbose --dangerously-skip-permissions` with a
per-trial HOME and CLAUDE_CONFIG_DIR under BENCH_RUN_DIR, and every switch that keeps it from
contacting anything but its model endpoint (CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC and the
telemetry/updater/error-reporting switches).

BENCH_AGENT_ARGS keys (see `adapters._common.AgentArgs` for the shared ones):
    model, base_url (ANTHROPIC_BASE_URL), api_key_env / api_key (sent as x-api-key),
    bin, package (default `@anthropic-ai/claude-code`), version, flags, env, max_turns,
    max_retries (CLAUDE_CODE_MAX_RETRIES), web, mcp_servers, context_limit,
    auth_token (bool: send the key as `Authorization: Bearer` instead of x-api-key).

Treatments: BENCH_SKILL_DIR -> `$CLAUDE_CONFIG_DIR/skills/<name>/SKILL.md`; MCP servers ->
`--mcp-config` with `--strict-mcp-config`; web off -> `--disallowedTools WebFetch WebSearch`.

Outputs: usage from the session transcript `$CLAUDE_CONFIG_DIR/projects/*/<session>.jsonl`
(the stream's per-message usage is only the message_start snapshot); the transcript from the
stream-json events; exit 75 when the final result is an API error (429, 5xx, 529, auth,
connection) rather than the agent's own failure.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from adapters import _outputs as out
from adapters._cli import Run
from adapters._common import INFRA_STATUSES, AgentArgs
from adapters._run import Cli, Launch, Result, Trial, main
from adapters.install import Package
from adapters.schema import ContextItem, TranscriptEvent, UsageRow

PACKAGE = Package("npm", "@anthropic-ai/claude-code", "2.1.197", "claude")
"""The CLI this adapter was driven end to end with (`python -m adapters.install claude_code`)."""


class ClaudeArgs(AgentArgs):
    """Claude Code's BENCH_AGENT_ARGS."""

    auth_token: bool = False
    """Send the key as ANTHROPIC_AUTH_TOKEN (Bearer) instead of ANTHROPIC_API_KEY."""


def build_env(trial: Trial[ClaudeArgs]) -> dict[str, str]:
    """The CLI's own variables."""
    args = trial.args
    env = {
        "CLAUDE_CONFIG_DIR": str(trial.home / ".claude"),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_BUG_COMMAND": "1",
        "IS_SANDBOX": "1",
        "CLAUDE_CODE_MAX_RETRIES": str(args.max_retries),
        "ANTHROPIC_AUTH_TOKEN" if args.auth_token else "ANTHROPIC_API_KEY": trial.key,
    }
    if args.base_url:
        env["ANTHROPIC_BASE_URL"] = args.base_url
    return env


def build_argv(trial: Trial[ClaudeArgs]) -> list[str]:
    """The command line; writes the MCP config into HOME when the cell has MCP servers."""
    args = trial.args
    argv = [str(trial.binary), "-p", "--output-format", "stream-json", "--verbose"]
    argv += ["--dangerously-skip-permissions", "--model", args.model]
    if args.max_turns is not None:
        argv += ["--max-turns", str(args.max_turns)]
    if trial.mcp:
        servers = {
            name: {"type": "stdio", "command": s.command[0], "args": s.command[1:], "env": s.env}
            for name, s in trial.mcp.items()
        }
        path = trial.home / "mcp.json"
        path.write_text(json.dumps({"mcpServers": servers}, indent=2), encoding="utf-8")
        argv += ["--mcp-config", str(path), "--strict-mcp-config"]
    if not trial.web:
        argv += ["--disallowedTools", "WebFetch", "WebSearch"]
    return argv + args.flags


def parse_stream(lines: list[tuple[float, str]]) -> tuple[list[TranscriptEvent], dict[str, Any]]:
    """Normalise stream-json events; also return the init and result events."""
    events: list[TranscriptEvent] = []
    found: dict[str, Any] = {}
    for t, obj in out.json_lines(lines):
        kind, sub = obj.get("type"), obj.get("subtype")
        if kind == "system":
            if sub == "init":
                found["init"] = obj
            retry = f"api_retry {obj.get('error_status')} {obj.get('error')}"
            events.append(out.notice(t, retry if sub == "api_retry" else sub))
        elif kind in ("assistant", "user"):
            content = (obj.get("message") or {}).get("content")
            if isinstance(content, str):
                content = [{"type": "text", "text": content}]
            for block in content or []:
                events.extend(_block(t, kind, block))
        elif kind == "result":
            found["result"] = obj
            text = f"result {sub}: {obj.get('result') or ''}"
            events.append(out.notice(t, text, error=bool(obj.get("is_error"))))
    return events, found


def _block(t: float, role: Any, block: dict[str, Any]) -> list[TranscriptEvent]:
    kind = block.get("type")
    if kind == "text":
        return [out.message(t, role, block.get("text", ""))]
    if kind == "tool_use":
        return [out.tool_call(t, block.get("name"), block.get("input"), block.get("id"))]
    if kind == "tool_result":
        content = block.get("content")
        if isinstance(content, list):
            content = "\n".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
        code = 1 if block.get("is_error") else None
        return [out.tool_result(t, str(content or ""), exit_code=code, call_id=block.get("tool_use_id"))]
    return []


def usage_from_session(path: Path, context_limit: int | None) -> list[UsageRow]:
    """One row per API message in the session transcript; its last record has the final usage."""
    by_id: dict[str, tuple[float, dict[str, Any], str]] = {}
    for obj in out.json_records([path]):
        message = obj.get("message")
        if obj.get("type") != "assistant" or not isinstance(message, dict):
            continue
        usage, mid = message.get("usage"), message.get("id")
        if not usage or not mid or message.get("model") == "<synthetic>":
            continue
        first = by_id.get(mid, (out.iso_time(obj["timestamp"]), usage, ""))[0]
        by_id[mid] = (first, usage, str(message.get("model") or ""))
    return [
        out.usage_row(
            t,
            input=int(usage.get("input_tokens") or 0),
            output=int(usage.get("output_tokens") or 0),
            cache_read=int(usage.get("cache_read_input_tokens") or 0),
            cache_write=int(usage.get("cache_creation_input_tokens") or 0),
            limit=context_limit,
            model=model,
        )
        for t, usage, model in by_id.values()
    ]


def infra_reason(result: dict[str, Any] | None) -> str | None:
    """Why the run failed for provider/infrastructure reasons, if it did."""
    if result is None or not result.get("is_error"):
        return None
    status = result.get("api_error_status")
    text = str(result.get("result") or "")
    if status in INFRA_STATUSES or (isinstance(status, int) and status >= 500):
        return f"API error {status}: {text[:200]}"
    if status is None and text.startswith("API Error"):
        return text[:200]
    if "authentication" in text.lower() or "invalid api key" in text.lower():
        return text[:200]
    return None


class ClaudeCode:
    """The Claude Code CLI."""

    cli = Cli("claude_code", PACKAGE, key_fallback="sk-ant-scripted", prompt_on_stdin=True)
    args = ClaudeArgs

    def launch(self, trial: Trial[ClaudeArgs]) -> Launch:
        """Skills into CLAUDE_CONFIG_DIR, MCP servers and web switches on the command line."""
        skills = out.install_skills(trial.bench.skill_dir, trial.home / ".claude" / "skills")
        return Launch(build_argv(trial), build_env(trial), skills)

    def read(self, trial: Trial[ClaudeArgs], done: Run) -> Result:
        """Usage from the session file, the transcript from the stream."""
        transcript, found = parse_stream(done.lines)
        init, result = found.get("init") or {}, found.get("result")
        limit = trial.args.context_limit
        for stats in (result or {}).get("modelUsage", {}).values():
            limit = limit or stats.get("contextWindow")
        sessions = sorted(trial.home.glob(f"**/projects/*/{init.get('session_id', '*')}.jsonl"))
        usage = [row for s in sessions for row in usage_from_session(s, limit)]
        loaded = out.workspace_instructions(
            trial.bench, ["CLAUDE.md", "CLAUDE.local.md", ".claude/CLAUDE.md"]
        )
        loaded += [
            ContextItem(
                kind="mcp_server",
                name=str(s.get("name")),
                source="treatment" if s.get("name") in trial.mcp else "agent",
            )
            for s in init.get("mcp_servers", [])
            if isinstance(s, dict)
        ]
        reason = infra_reason(result)
        if result is None and done.returncode != 0 and not done.lines:
            reason = f"claude exited {done.returncode} before starting: {done.stderr[-300:]}"
        version = init.get("claude_code_version")
        return Result(usage, transcript, reason, version=version, loaded=loaded)


ADAPTER = ClaudeCode()

if __name__ == "__main__":
    sys.exit(main(ADAPTER))
