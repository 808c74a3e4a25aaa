"""Codex CLI adapter: `python -m adapters.codex` (prompt on stdin, cwd = workspace).

Runs `codex exec --json --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox -`
with a per-trial HOME and CODEX_HOME under BENCH_RUN_DIR, whose `config.toml` declares a model
provider for `base_url` (Responses API), turns off analytics, plugin sync and update checks
(the only off-box traffic Codex makes with a custom provider), and sets retries.

BENCH_AGENT_ARGS keys (see `adapters._common.AgentArgs` for the shared ones):
    model, base_url (the provider's base URL; `/v1` is appended if missing), api_key_env /
    api_key (sent as Bearer), bin, package (default `@openai/codex`), version, flags, env,
    max_retries (request/stream retries), web, mcp_servers, context_limit,
    reasoning_effort (e.g. "low"; default: Codex's own).

Treatments: BENCH_SKILL_DIR -> `$CODEX_HOME/AGENTS.md` (the guide's text, global instructions);
MCP servers -> `[mcp_servers.<name>]` tables (the model sees them as namespace `mcp__<name>`);
web -> `web_search = "live"` or `"disabled"`.

Outputs: usage from the session rollout (`$CODEX_HOME/sessions/**/rollout-*.jsonl`,
`token_count.last_token_usage` per request); the transcript from `--json` events. The
"Model metadata ... not found" error item Codex emits for unknown models is kept in the
transcript but is not a failure; `turn.failed` with a provider error exits 75.
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

PACKAGE = "@openai/codex"
KEY_VAR = "ASSAY_CODEX_API_KEY"


class CodexArgs(AgentArgs):
    """Codex's BENCH_AGENT_ARGS."""

    reasoning_effort: str | None = None
    """model_reasoning_effort for the config, if set."""


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + " }"
    return json.dumps(str(value))


def config_toml(bench: Bench, args: CodexArgs) -> str:
    """The per-trial `config.toml`."""
    lines = [
        f"model = {_toml(args.model)}",
        "check_for_update_on_startup = false",
        'approval_policy = "never"',
        'sandbox_mode = "danger-full-access"',
        f"web_search = {_toml('live' if bench.web(args) else 'disabled')}",
    ]
    if args.reasoning_effort:
        lines.append(f"model_reasoning_effort = {_toml(args.reasoning_effort)}")
    if args.base_url:
        lines.append('model_provider = "assay"')
    lines += ["", "[analytics]", "enabled = false", "", "[features]", "plugins = false", ""]
    if args.base_url:
        base = args.base_url.rstrip("/")
        base = base if base.endswith("/v1") else base + "/v1"
        lines += [
            "[model_providers.assay]",
            'name = "assay"',
            f"base_url = {_toml(base)}",
            f"env_key = {_toml(KEY_VAR)}",
            'wire_api = "responses"',
            f"request_max_retries = {args.max_retries}",
            f"stream_max_retries = {args.max_retries}",
            "",
        ]
    for name, server in bench.mcp_servers(args).items():
        lines += [
            f"[mcp_servers.{json.dumps(name)}]",
            f"command = {_toml(server.command[0])}",
            f"args = {_toml(server.command[1:])}",
        ]
        if server.env:
            lines.append(f"env = {_toml(server.env)}")
        lines.append("")
    return "\n".join(lines)


def parse_events(lines: list[tuple[float, str]]) -> tuple[list[TranscriptEvent], dict[str, Any]]:
    """Normalise `codex exec --json` events; also return thread id and the failure, if any."""
    events: list[TranscriptEvent] = []
    found: dict[str, Any] = {}
    for t, line in lines:
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue
        kind = obj.get("type", "")
        if kind == "thread.started":
            found["thread_id"] = obj.get("thread_id")
            events.append(TranscriptEvent(t=t, type="system", role="system", text=kind))
        elif kind == "turn.failed":
            found["failed"] = str((obj.get("error") or {}).get("message", ""))
            events.append(TranscriptEvent(t=t, type="error", role="system", text=found["failed"]))
        elif kind == "turn.completed":
            found["completed"] = obj.get("usage")
            events.append(TranscriptEvent(t=t, type="system", role="system", text=kind))
        elif kind == "error":
            events.append(TranscriptEvent(t=t, type="error", role="system", text=obj.get("message")))
        elif kind in ("item.started", "item.completed"):
            events.extend(_item(t, kind, obj.get("item") or {}))
    return events, found


def _item(t: float, kind: str, item: dict[str, Any]) -> list[TranscriptEvent]:
    itype, iid = item.get("type"), item.get("id")
    if itype == "agent_message" and kind == "item.completed":
        return [TranscriptEvent(t=t, type="message", role="assistant", text=item.get("text"))]
    if itype == "reasoning" and kind == "item.completed":
        return [TranscriptEvent(t=t, type="message", role="assistant", text=item.get("text"))]
    if itype == "command_execution":
        if kind == "item.started":
            return [
                TranscriptEvent(
                    t=t,
                    type="tool_call",
                    role="assistant",
                    tool="exec_command",
                    input={"cmd": item.get("command")},
                    call_id=iid,
                )
            ]
        return [
            TranscriptEvent(
                t=t,
                type="tool_result",
                role="tool",
                tool="exec_command",
                output=item.get("aggregated_output"),
                exit_code=item.get("exit_code"),
                call_id=iid,
            )
        ]
    if itype in ("mcp_tool_call", "web_search", "file_change") and kind == "item.completed":
        return [
            TranscriptEvent(
                t=t,
                type="tool_call",
                role="assistant",
                tool=str(itype),
                input={k: v for k, v in item.items() if k not in ("id", "type")},
                call_id=iid,
            )
        ]
    if itype == "error" and kind == "item.completed":
        # Codex warns "Model metadata ... not found" for any unknown model: a notice, not a failure
        return [TranscriptEvent(t=t, type="system", role="system", text=item.get("message"))]
    return []


def usage_from_rollouts(codex_home: Path, context_limit: int | None, model: str) -> list[UsageRow]:
    """One row per `token_count` event with a new `last_token_usage` in the session rollouts."""
    rows: list[UsageRow] = []
    for path in sorted(codex_home.glob("sessions/**/rollout-*.jsonl")):
        previous: Any = None
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                continue
            payload = obj.get("payload") or {}
            if obj.get("type") != "event_msg" or payload.get("type") != "token_count":
                continue
            info = payload.get("info") or {}
            last, total = info.get("last_token_usage"), info.get("total_token_usage")
            if not last or total == previous:
                continue  # token_count is re-emitted without a new request (rate-limit updates)
            previous = total
            cached = int(last.get("cached_input_tokens") or 0)
            inp = int(last.get("input_tokens") or 0) - cached
            stamp = datetime.fromisoformat(obj["timestamp"].replace("Z", "+00:00")).timestamp()
            rows.append(
                UsageRow(
                    t=stamp,
                    input=inp,
                    output=int(last.get("output_tokens") or 0),
                    cache_read=cached,
                    reasoning=int(last.get("reasoning_output_tokens") or 0),
                    context=inp + cached,
                    context_limit=context_limit or info.get("model_context_window"),
                    model=model,
                )
            )
    return rows


_INFRA = re.compile(
    r"\b(429|5\d\d|529|401|403)\b|high demand|overloaded|rate limit|unauthori[sz]ed|"
    r"stream disconnected|error sending request|connection refused|"
    r"exceeded retry limit",
    re.IGNORECASE,
)


def run(bench: Bench) -> int:
    """Run one trial."""
    args = bench.args(CodexArgs)
    home = bench.run_dir / "home"
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    binary = find_cli(bench, args, package=PACKAGE, name="codex")
    try:
        key = api_key(args, "sk-scripted")
    except InfraFailure as exc:
        info = AgentInfo(agent="codex", version=None, model=args.model, infra_failure=str(exc))
        return finish(bench, Outcome(info, [], [], []))
    env = agent_env(bench, home, {"CODEX_HOME": str(codex_home), KEY_VAR: key, **args.env})
    (codex_home / "config.toml").write_text(config_toml(bench, args), encoding="utf-8")
    loaded: list[ContextItem] = []
    guide = guide_text(bench.skill_dir)
    if guide:
        (codex_home / "AGENTS.md").write_text(guide + "\n", encoding="utf-8")
        loaded.append(
            ContextItem(
                kind="skill", name=bench.skill_dir.name if bench.skill_dir else "", path=str(bench.skill_dir)
            )
        )
    loaded += workspace_instructions(bench, ["AGENTS.md", "AGENTS.override.md"])
    loaded += [ContextItem(kind="mcp_server", name=n) for n in bench.mcp_servers(args)]
    argv = [
        str(binary),
        "exec",
        "--json",
        "--skip-git-repo-check",
        "--dangerously-bypass-approvals-and-sandbox",
        "-m",
        args.model,
        *args.flags,
        "-",
    ]
    version = cli_version(binary, env)
    done = run_cli(
        argv, env=env, cwd=bench.workspace, stdin=bench.prompt, log_dir=bench.run_dir, name="codex"
    )
    transcript, found = parse_events(done.lines)
    usage = usage_from_rollouts(codex_home, args.context_limit, args.model)
    failed = found.get("failed")
    reason = None
    if failed is not None and _INFRA.search(failed):
        reason = failed[:300]
    elif done.returncode != 0 and not done.lines:
        reason = f"codex exited {done.returncode} before starting: {done.stderr[-300:]}"
    info = AgentInfo(
        agent="codex",
        version=version,
        model=args.model,
        binary=str(binary),
        exit_code=1 if failed is not None and done.returncode == 0 else done.returncode,
        infra_failure=reason,
    )
    return finish(bench, Outcome(info, usage, transcript, loaded))


def main() -> int:
    """Entry point."""
    return main_guard(lambda: run(read_bench()))


if __name__ == "__main__":
    sys.exit(main())
