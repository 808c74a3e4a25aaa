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
from datetime import datetime
from pathlib import Path
from typing import Any

from adapters._common import (
    INFRA_STATUSES,
    AgentArgs,
    Bench,
    InfraFailure,
    Outcome,
    agent_env,
    api_key,
    cli_version,
    find_cli,
    finish,
    install_skills,
    main_guard,
    read_bench,
    run_cli,
    workspace_instructions,
)
from adapters.schema import AgentInfo, ContextItem, TranscriptEvent, UsageRow

PACKAGE = "@anthropic-ai/claude-code"


class ClaudeArgs(AgentArgs):
    """Claude Code's BENCH_AGENT_ARGS."""

    auth_token: bool = False
    """Send the key as ANTHROPIC_AUTH_TOKEN (Bearer) instead of ANTHROPIC_API_KEY."""


def build_env(bench: Bench, args: ClaudeArgs, home: Path) -> dict[str, str]:
    """The CLI's environment."""
    extra = {
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_BUG_COMMAND": "1",
        "IS_SANDBOX": "1",
        "CLAUDE_CODE_MAX_RETRIES": str(args.max_retries),
    }
    if args.base_url:
        extra["ANTHROPIC_BASE_URL"] = args.base_url
    key = api_key(args, "sk-ant-scripted")
    extra["ANTHROPIC_AUTH_TOKEN" if args.auth_token else "ANTHROPIC_API_KEY"] = key
    return agent_env(bench, home, {**extra, **args.env})


def build_argv(binary: Path, bench: Bench, args: ClaudeArgs, home: Path) -> list[str]:
    """The command line."""
    argv = [
        str(binary),
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--dangerously-skip-permissions",
        "--model",
        args.model,
    ]
    if args.max_turns is not None:
        argv += ["--max-turns", str(args.max_turns)]
    servers = bench.mcp_servers(args)
    if servers:
        config = {
            "mcpServers": {
                name: {"type": "stdio", "command": s.command[0], "args": s.command[1:], "env": s.env}
                for name, s in servers.items()
            }
        }
        path = home / "mcp.json"
        path.write_text(json.dumps(config, indent=2), encoding="utf-8")
        argv += ["--mcp-config", str(path), "--strict-mcp-config"]
    if not bench.web(args):
        argv += ["--disallowedTools", "WebFetch", "WebSearch"]
    return argv + args.flags


def parse_stream(lines: list[tuple[float, str]]) -> tuple[list[TranscriptEvent], dict[str, Any]]:
    """Normalise stream-json events; also return the init and result events."""
    events: list[TranscriptEvent] = []
    found: dict[str, Any] = {}
    for t, line in lines:
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue
        kind, sub = obj.get("type"), obj.get("subtype")
        if kind == "system":
            if sub == "init":
                found["init"] = obj
            events.append(
                TranscriptEvent(
                    t=t,
                    type="system",
                    role="system",
                    text=sub
                    if sub != "api_retry"
                    else f"api_retry {obj.get('error_status')} {obj.get('error')}",
                )
            )
        elif kind in ("assistant", "user"):
            message = obj.get("message") or {}
            content = message.get("content")
            if isinstance(content, str):
                content = [{"type": "text", "text": content}]
            for block in content or []:
                events.extend(_block(t, kind, block))
        elif kind == "result":
            found["result"] = obj
            text = str(obj.get("result") or "")
            events.append(
                TranscriptEvent(
                    t=t,
                    type="error" if obj.get("is_error") else "system",
                    role="system",
                    text=f"result {sub}: {text}",
                )
            )
    return events, found


def _block(t: float, role: str, block: dict[str, Any]) -> list[TranscriptEvent]:
    kind = block.get("type")
    if kind == "text":
        return [TranscriptEvent(t=t, type="message", role=role, text=block.get("text", ""))]
    if kind == "tool_use":
        return [
            TranscriptEvent(
                t=t,
                type="tool_call",
                role="assistant",
                tool=block.get("name"),
                input=block.get("input"),
                call_id=block.get("id"),
            )
        ]
    if kind == "tool_result":
        content = block.get("content")
        if isinstance(content, list):
            content = "\n".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
        return [
            TranscriptEvent(
                t=t,
                type="tool_result",
                role="tool",
                output=str(content or ""),
                call_id=block.get("tool_use_id"),
                exit_code=1 if block.get("is_error") else None,
            )
        ]
    return []


def usage_from_session(path: Path, context_limit: int | None) -> list[UsageRow]:
    """One row per API message in the session transcript; its last record has the final usage."""
    by_id: dict[str, tuple[float, dict[str, Any], str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue
        message = obj.get("message")
        if obj.get("type") != "assistant" or not isinstance(message, dict):
            continue
        usage, mid = message.get("usage"), message.get("id")
        if not usage or not mid or message.get("model") == "<synthetic>":
            continue
        stamp = datetime.fromisoformat(obj["timestamp"].replace("Z", "+00:00")).timestamp()
        first = by_id.get(mid, (stamp, usage, ""))[0]
        by_id[mid] = (first, usage, str(message.get("model") or ""))
    rows = []
    for t, usage, model in by_id.values():
        inp, out = int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)
        read = int(usage.get("cache_read_input_tokens") or 0)
        write = int(usage.get("cache_creation_input_tokens") or 0)
        rows.append(
            UsageRow(
                t=t,
                input=inp,
                output=out,
                cache_read=read,
                cache_write=write,
                context=inp + read + write,
                context_limit=context_limit,
                model=model,
            )
        )
    return rows


def infra_reason(result: dict[str, Any] | None, returncode: int) -> str | None:
    """Why the run failed for provider/infrastructure reasons, if it did."""
    if result is None:
        return None
    if not result.get("is_error"):
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


def run(bench: Bench) -> int:
    """Run one trial."""
    args = bench.args(ClaudeArgs)
    home = bench.run_dir / "home"
    binary = find_cli(bench, args, package=PACKAGE, name="claude")
    try:
        env = build_env(bench, args, home)
    except InfraFailure as exc:
        return finish(
            bench,
            Outcome(
                AgentInfo(agent="claude_code", version=None, model=args.model, infra_failure=str(exc)),
                [],
                [],
                [],
            ),
        )
    loaded = install_skills(bench.skill_dir, home / ".claude" / "skills")
    argv = build_argv(binary, bench, args, home)
    version = cli_version(binary, env)
    done = run_cli(
        argv, env=env, cwd=bench.workspace, stdin=bench.prompt, log_dir=bench.run_dir, name="claude"
    )
    transcript, found = parse_stream(done.lines)
    init, result = found.get("init") or {}, found.get("result")
    limit = args.context_limit
    for stats in (result or {}).get("modelUsage", {}).values():
        limit = limit or stats.get("contextWindow")
    sessions = sorted(home.glob(f"**/projects/*/{init.get('session_id', '*')}.jsonl"))
    usage = [row for s in sessions for row in usage_from_session(s, limit)]
    loaded += workspace_instructions(bench, ["CLAUDE.md", "CLAUDE.local.md", ".claude/CLAUDE.md"])
    loaded += [
        ContextItem(
            kind="mcp_server",
            name=str(s.get("name")),
            source="treatment" if s.get("name") in bench.mcp_servers(args) else "agent",
        )
        for s in init.get("mcp_servers", [])
        if isinstance(s, dict)
    ]
    reason = infra_reason(result, done.returncode)
    if result is None and done.returncode != 0 and not done.lines:
        reason = f"claude exited {done.returncode} before starting: {done.stderr[-300:]}"
    info = AgentInfo(
        agent="claude_code",
        version=init.get("claude_code_version") or version,
        model=args.model,
        binary=str(binary),
        exit_code=done.returncode,
        infra_failure=reason,
    )
    return finish(bench, Outcome(info, usage, transcript, loaded))


def main() -> int:
    """Entry point."""
    return main_guard(lambda: run(read_bench()))


if __name__ == "__main__":
    sys.exit(main())
