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
from pathlib import Path
from typing import Any

from adapters import _outputs as out
from adapters._cli import Run
from adapters._common import AgentArgs
from adapters._run import Cli, Launch, Result, Trial, main
from adapters.install import Package
from adapters.schema import TranscriptEvent, UsageRow

PACKAGE = Package("npm", "@google/gemini-cli", "0.61.0", "gemini")
"""The CLI this adapter was driven end to end with (`python -m adapters.install gemini_cli`)."""

WEB_TOOLS = ["google_web_search", "web_fetch"]
_INFRA = re.compile(
    r"\b(429|5\d\d|401|403)\b|RESOURCE_EXHAUSTED|UNAVAILABLE|UNAUTHENTICATED|"
    r"overloaded|fetch failed|ECONNREFUSED|API key not valid",
    re.I,
)
_ATTEMPT = r"^Attempt \d+ failed with status (\d+)"


def settings(trial: Trial[AgentArgs]) -> dict[str, Any]:
    """The per-trial `~/.gemini/settings.json`."""
    data: dict[str, Any] = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
    }
    if not trial.web:
        data["tools"] = {"exclude": WEB_TOOLS}
    if trial.mcp:
        data["mcpServers"] = {
            n: {"command": s.command[0], "args": s.command[1:], "env": s.env} for n, s in trial.mcp.items()
        }
    return data


def parse_stream(lines: list[tuple[float, str]]) -> tuple[list[TranscriptEvent], dict[str, Any]]:
    """Normalise stream-json events (assistant deltas are merged per turn)."""
    events: list[TranscriptEvent] = []
    found: dict[str, Any] = {}
    for t, obj in out.json_lines(lines):
        kind = obj.get("type")
        if kind == "init":
            found["init"] = obj
            events.append(out.notice(t, f"init {obj.get('model')}"))
        elif kind == "message":
            role: out.Role = "assistant" if obj.get("role") == "assistant" else "user"
            text = str(obj.get("content") or "")
            last = events[-1] if events else None
            if obj.get("delta") and last is not None and last.type == "message" and last.role == role:
                events[-1] = last.model_copy(update={"text": (last.text or "") + text})
            else:
                events.append(out.message(t, role, text))
        elif kind == "tool_use":
            events.append(out.tool_call(t, obj.get("tool_name"), obj.get("parameters"), obj.get("tool_id")))
        elif kind == "tool_result":
            output = str(obj.get("output") or (obj.get("error") or {}).get("message") or "")
            code = 0 if obj.get("status") == "success" else 1
            events.append(out.tool_result(t, output, exit_code=code, call_id=obj.get("tool_id")))
        elif kind in ("error", "result"):
            events.append(_outcome(t, kind, obj, found))
    return events, found


def _outcome(t: float, kind: str, obj: dict[str, Any], found: dict[str, Any]) -> TranscriptEvent:
    """The run's result or an error; an error is noted in `found`."""
    if kind == "result":
        found["result"] = obj
    if kind == "result" and obj.get("status") == "success":
        return out.notice(t, f"result {obj.get('status')}")
    error = obj.get("error") or {}
    message = error.get("message") if isinstance(error, dict) else str(error)
    found["error"] = message or obj.get("message") or json.dumps(obj)[:300]
    return out.notice(t, found["error"], error=True)


def usage_from_sessions(home: Path, limit: int | None) -> list[UsageRow]:
    """One row per `gemini` record (deduplicated by id) in the chat session logs."""
    rows: dict[str, UsageRow] = {}
    for obj in out.json_records(sorted(home.glob(".gemini/tmp/*/chats/session-*.jsonl"))):
        tokens = obj.get("tokens")
        if obj.get("type") != "gemini" or not isinstance(tokens, dict):
            continue
        cached, thoughts = int(tokens.get("cached") or 0), int(tokens.get("thoughts") or 0)
        rows[str(obj.get("id"))] = out.usage_row(
            out.iso_time(obj["timestamp"]),
            input=int(tokens.get("input") or 0) - cached,
            output=int(tokens.get("output") or 0) + thoughts,
            cache_read=cached,
            reasoning=thoughts,
            limit=limit,
            model=obj.get("model"),
        )
    return sorted(rows.values(), key=lambda r: r.t)


def _last_attempt(stderr: str) -> str:
    found = [line for line in stderr.splitlines() if re.match(_ATTEMPT, line)]
    return found[-1][:300] if found else ""


class GeminiCli:
    """The Gemini CLI (retries 10 times with 5-30 s backoff and no setting for it: stopped after
    max_retries failed attempts)."""

    cli = Cli("gemini_cli", PACKAGE, key_fallback="scripted-key", retry_line=_ATTEMPT)
    args = AgentArgs

    def launch(self, trial: Trial[AgentArgs]) -> Launch:
        """settings.json and the guide as GEMINI.md under HOME; the endpoint in the environment."""
        config = trial.home / ".gemini"
        config.mkdir(parents=True, exist_ok=True)
        (config / "settings.json").write_text(json.dumps(settings(trial), indent=2), encoding="utf-8")
        guide = out.guide_text(trial.bench.skill_dir)
        if guide:
            (config / "GEMINI.md").write_text(guide + "\n", encoding="utf-8")
        loaded = out.skill_items(trial.bench.skill_dir if guide else None)
        loaded += out.workspace_instructions(trial.bench, ["GEMINI.md"])
        env = {"GEMINI_API_KEY": trial.key, "GEMINI_CLI_HOME": str(trial.home)}
        env |= {"GEMINI_CLI_TRUST_WORKSPACE": "true", "NO_COLOR": "1"}
        if trial.args.base_url:
            env["GOOGLE_GEMINI_BASE_URL"] = trial.args.base_url.rstrip("/")
        argv = [str(trial.binary), "-p", trial.bench.prompt, "--output-format", "stream-json", "--yolo"]
        return Launch(
            [*argv, "-m", trial.args.model, *trial.args.flags], env, loaded + out.mcp_items(trial.mcp)
        )

    def read(self, trial: Trial[AgentArgs], done: Run) -> Result:
        """Usage from the chat session logs, the transcript from stream-json."""
        transcript, found = parse_stream(done.lines)
        usage = usage_from_sessions(trial.home, trial.args.context_limit)
        error = str(found.get("error") or "")
        reason = None
        if done.stopped:
            reason = f"provider kept failing after {done.retries} attempts: {_last_attempt(done.stderr)}"
        elif (error or done.returncode != 0) and _INFRA.search(error + "\n" + done.stderr[-3000:]):
            reason = (error or done.stderr[-300:])[:300]
        return Result(usage, transcript, reason)


ADAPTER = GeminiCli()

if __name__ == "__main__":
    sys.exit(main(ADAPTER))
