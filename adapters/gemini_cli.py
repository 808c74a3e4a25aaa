"""Gemini CLI adapter: `python -m adapters.gemini_cli` (prompt on stdin, cwd = workspace).

Runs `gemini -p <prompt> --output-format stream-json --yolo -m <model>` with a per-trial HOME
(and GEMINI_CLI_HOME) whose `.gemini/settings.json` selects API-key auth and turns off usage
statistics, telemetry and auto-update; the workspace is trusted through
GEMINI_CLI_TRUST_WORKSPACE. The model endpoint is GOOGLE_GEMINI_BASE_URL (the Gemini API,
which the scripted model server also speaks: `:streamGenerateContent`).

BENCH_AGENT_ARGS keys (see `adapters._common.AgentArgs` for the shared ones):
    model, base_url (GOOGLE_GEMINI_BASE_URL), api_key_env / api_key (GEMINI_API_KEY), bin,
    package (default `@google/gemini-cli`), version, flags, env, web, mcp_servers, context_limit,
    max_retries (failed attempts tolerated before the adapter stops the CLI and exits 75).

Treatments: BENCH_SKILL_DIR -> `~/.gemini/GEMINI.md` (global context: the guide's text); MCP
servers -> `mcpServers` in settings.json; web off -> `tools.exclude` of the web tools.

Outputs: usage from the session log `~/.gemini/tmp/<project>/chats/session-*.jsonl` (`gemini`
records with `tokens`); the transcript from stream-json; exit 75 when the result is an error
that names a provider status (429, 5xx, 529, auth) or a connection failure.
"""

from __future__ import annotations

import json
import re
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from adapters._common import (
    AgentArgs,
    Bench,
    InfraFailure,
    Outcome,
    agent_env,
    api_key,
    cli_version,
    find_cli,
    finish,
    guide_text,
    main_guard,
    read_bench,
    run_cli,
    workspace_instructions,
)
from adapters.schema import AgentInfo, ContextItem, TranscriptEvent, UsageRow

PACKAGE = "@google/gemini-cli"
WEB_TOOLS = ["google_web_search", "web_fetch"]
_INFRA = re.compile(
    r"\b(429|5\d\d|401|403)\b|RESOURCE_EXHAUSTED|UNAVAILABLE|UNAUTHENTICATED|"
    r"overloaded|fetch failed|ECONNREFUSED|API key not valid",
    re.I,
)


def settings(bench: Bench, args: AgentArgs) -> dict[str, Any]:
    """The per-trial `~/.gemini/settings.json`."""
    data: dict[str, Any] = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
    }
    if not bench.web(args):
        data["tools"] = {"exclude": WEB_TOOLS}
    servers = bench.mcp_servers(args)
    if servers:
        data["mcpServers"] = {
            n: {"command": s.command[0], "args": s.command[1:], "env": s.env} for n, s in servers.items()
        }
    return data


def parse_stream(lines: list[tuple[float, str]]) -> tuple[list[TranscriptEvent], dict[str, Any]]:
    """Normalise stream-json events (assistant deltas are merged per turn)."""
    events: list[TranscriptEvent] = []
    found: dict[str, Any] = {}
    for t, line in lines:
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue
        kind = obj.get("type")
        if kind == "init":
            found["init"] = obj
            events.append(TranscriptEvent(t=t, type="system", role="system", text=f"init {obj.get('model')}"))
        elif kind == "message":
            role = "assistant" if obj.get("role") == "assistant" else "user"
            text = str(obj.get("content") or "")
            last = events[-1] if events else None
            if obj.get("delta") and last is not None and last.type == "message" and last.role == role:
                events[-1] = last.model_copy(update={"text": (last.text or "") + text})
            else:
                events.append(TranscriptEvent(t=t, type="message", role=role, text=text))
        elif kind == "tool_use":
            events.append(
                TranscriptEvent(
                    t=t,
                    type="tool_call",
                    role="assistant",
                    tool=obj.get("tool_name"),
                    input=obj.get("parameters"),
                    call_id=obj.get("tool_id"),
                )
            )
        elif kind == "tool_result":
            error = obj.get("error") or {}
            events.append(
                TranscriptEvent(
                    t=t,
                    type="tool_result",
                    role="tool",
                    call_id=obj.get("tool_id"),
                    output=str(obj.get("output") or error.get("message") or ""),
                    exit_code=0 if obj.get("status") == "success" else 1,
                )
            )
        elif kind in ("error", "result"):
            if kind == "result":
                found["result"] = obj
            error = obj.get("error") or {}
            message = error.get("message") if isinstance(error, dict) else str(error)
            is_error = kind == "error" or obj.get("status") != "success"
            if is_error:
                found["error"] = message or obj.get("message") or json.dumps(obj)[:300]
            events.append(
                TranscriptEvent(
                    t=t,
                    type="error" if is_error else "system",
                    role="system",
                    text=found.get("error") if is_error else f"result {obj.get('status')}",
                )
            )
    return events, found


def usage_from_sessions(home: Path, limit: int | None) -> list[UsageRow]:
    """One row per `gemini` record (deduplicated by id) in the chat session logs."""
    rows: dict[str, UsageRow] = {}
    for path in sorted(home.glob(".gemini/tmp/*/chats/session-*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                continue
            tokens = obj.get("tokens")
            if obj.get("type") != "gemini" or not isinstance(tokens, dict):
                continue
            cached = int(tokens.get("cached") or 0)
            inp = int(tokens.get("input") or 0) - cached
            stamp = datetime.fromisoformat(obj["timestamp"].replace("Z", "+00:00")).timestamp()
            rows[str(obj.get("id"))] = UsageRow(
                t=stamp,
                input=inp,
                output=int(tokens.get("output") or 0) + int(tokens.get("thoughts") or 0),
                cache_read=cached,
                reasoning=int(tokens.get("thoughts") or 0),
                context=inp + cached,
                context_limit=limit,
                model=obj.get("model"),
            )
    return sorted(rows.values(), key=lambda r: r.t)


_ATTEMPT = re.compile(r"^Attempt \d+ failed with status (\d+)")


def _last_attempt(stderr: str) -> str:
    found = [line for line in stderr.splitlines() if _ATTEMPT.match(line)]
    return found[-1][:300] if found else ""


def run(bench: Bench) -> int:
    """Run one trial."""
    args = bench.args(AgentArgs)
    home = bench.run_dir / "home"
    binary = find_cli(bench, args, package=PACKAGE, name="gemini")
    try:
        key = api_key(args, "scripted-key")
    except InfraFailure as exc:
        info = AgentInfo(agent="gemini_cli", version=None, model=args.model, infra_failure=str(exc))
        return finish(bench, Outcome(info, [], [], []))
    extra = {
        "GEMINI_API_KEY": key,
        "GEMINI_CLI_HOME": str(home),
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
        "NO_COLOR": "1",
        **args.env,
    }
    if args.base_url:
        extra["GOOGLE_GEMINI_BASE_URL"] = args.base_url.rstrip("/")
    env = agent_env(bench, home, extra)
    config = home / ".gemini"
    config.mkdir(parents=True, exist_ok=True)
    (config / "settings.json").write_text(json.dumps(settings(bench, args), indent=2), encoding="utf-8")
    loaded: list[ContextItem] = []
    guide = guide_text(bench.skill_dir)
    if guide and bench.skill_dir:
        (config / "GEMINI.md").write_text(guide + "\n", encoding="utf-8")
        loaded.append(ContextItem(kind="skill", name=bench.skill_dir.name, path=str(bench.skill_dir)))
    loaded += workspace_instructions(bench, ["GEMINI.md"])
    loaded += [ContextItem(kind="mcp_server", name=n) for n in bench.mcp_servers(args)]
    argv = [
        str(binary),
        "-p",
        bench.prompt,
        "--output-format",
        "stream-json",
        "--yolo",
        "-m",
        args.model,
        *args.flags,
    ]
    failures = 0

    def too_many_retries(line: str) -> bool:
        # Gemini CLI retries provider errors 10 times with 5-30 s backoff and has no setting for it
        nonlocal failures
        failures += bool(_ATTEMPT.match(line))
        return failures > args.max_retries

    done = run_cli(
        argv,
        env=env,
        cwd=bench.workspace,
        stdin=None,
        log_dir=bench.run_dir,
        name="gemini",
        stop_when=too_many_retries,
    )
    transcript, found = parse_stream(done.lines)
    usage = usage_from_sessions(home, args.context_limit)
    error = str(found.get("error") or "")
    reason = None
    if failures > args.max_retries:
        reason = f"provider kept failing after {failures} attempts: {_last_attempt(done.stderr)}"
    elif (error or done.returncode != 0) and _INFRA.search(error + "\n" + done.stderr[-3000:]):
        reason = (error or done.stderr[-300:])[:300]
    info = AgentInfo(
        agent="gemini_cli",
        version=cli_version(binary, env),
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
