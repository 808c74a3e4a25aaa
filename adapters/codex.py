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
from pathlib import Path
from typing import Any

from adapters import _outputs as out
from adapters._cli import Run
from adapters._common import AgentArgs, v1_url
from adapters._run import Cli, Launch, Result, Trial, main
from adapters.install import Package
from adapters.schema import TranscriptEvent, UsageRow

PACKAGE = Package("npm", "@openai/codex", "0.171.0", "codex")
"""The CLI this adapter was driven end to end with (`python -m adapters.install codex`)."""

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


def config_toml(trial: Trial[CodexArgs]) -> str:
    """The per-trial `config.toml`."""
    args = trial.args
    lines = [
        f"model = {_toml(args.model)}",
        "check_for_update_on_startup = false",
        'approval_policy = "never"',
        'sandbox_mode = "danger-full-access"',
        f"web_search = {_toml('live' if trial.web else 'disabled')}",
    ]
    if args.reasoning_effort:
        lines.append(f"model_reasoning_effort = {_toml(args.reasoning_effort)}")
    if args.base_url:
        lines.append('model_provider = "assay"')
    lines += ["", "[analytics]", "enabled = false", "", "[features]", "plugins = false", ""]
    if args.base_url:
        lines += [
            "[model_providers.assay]",
            'name = "assay"',
            f"base_url = {_toml(v1_url(args.base_url))}",
            f"env_key = {_toml(KEY_VAR)}",
            'wire_api = "responses"',
            f"request_max_retries = {args.max_retries}",
            f"stream_max_retries = {args.max_retries}",
            "",
        ]
    for name, server in trial.mcp.items():
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
    for t, obj in out.json_lines(lines):
        kind = obj.get("type", "")
        if kind == "thread.started":
            found["thread_id"] = obj.get("thread_id")
            events.append(out.notice(t, kind))
        elif kind == "turn.completed":
            found["completed"] = obj.get("usage")
            events.append(out.notice(t, kind))
        elif kind == "turn.failed":
            found["failed"] = str((obj.get("error") or {}).get("message", ""))
            events.append(out.notice(t, found["failed"], error=True))
        elif kind == "error":
            events.append(out.notice(t, obj.get("message"), error=True))
        elif kind in ("item.started", "item.completed"):
            events.extend(_item(t, kind, obj.get("item") or {}))
    return events, found


def _item(t: float, kind: str, item: dict[str, Any]) -> list[TranscriptEvent]:
    itype, iid, completed = item.get("type"), item.get("id"), kind == "item.completed"
    if itype in ("agent_message", "reasoning") and completed:
        return [out.message(t, "assistant", item.get("text"))]
    if itype == "command_execution" and not completed:
        return [out.tool_call(t, "exec_command", {"cmd": item.get("command")}, iid)]
    if itype == "command_execution":
        output, code = item.get("aggregated_output"), item.get("exit_code")
        return [out.tool_result(t, output, exit_code=code, call_id=iid, tool="exec_command")]
    if itype in ("mcp_tool_call", "web_search", "file_change") and completed:
        details = {k: v for k, v in item.items() if k not in ("id", "type")}
        return [out.tool_call(t, str(itype), details, iid)]
    if itype == "error" and completed:
        # Codex warns "Model metadata ... not found" for any unknown model: a notice, not a failure
        return [out.notice(t, item.get("message"))]
    return []


def usage_from_rollouts(codex_home: Path, context_limit: int | None, model: str) -> list[UsageRow]:
    """One row per `token_count` event with a new `last_token_usage` in the session rollouts."""
    rows: list[UsageRow] = []
    for path in sorted(codex_home.glob("sessions/**/rollout-*.jsonl")):
        previous: Any = None
        for obj in out.json_records([path]):
            payload = obj.get("payload") or {}
            if obj.get("type") != "event_msg" or payload.get("type") != "token_count":
                continue
            info = payload.get("info") or {}
            last, total = info.get("last_token_usage"), info.get("total_token_usage")
            if not last or total == previous:
                continue  # token_count is re-emitted without a new request (rate-limit updates)
            previous = total
            cached = int(last.get("cached_input_tokens") or 0)
            row = out.usage_row(
                out.iso_time(obj["timestamp"]),
                input=int(last.get("input_tokens") or 0) - cached,
                output=int(last.get("output_tokens") or 0),
                cache_read=cached,
                reasoning=int(last.get("reasoning_output_tokens") or 0),
                limit=context_limit or info.get("model_context_window"),
                model=model,
            )
            rows.append(row)
    return rows


_INFRA = re.compile(
    r"\b(429|5\d\d|529|401|403)\b|high demand|overloaded|rate limit|unauthori[sz]ed|"
    r"stream disconnected|error sending request|connection refused|"
    r"exceeded retry limit",
    re.IGNORECASE,
)


class Codex:
    """The Codex CLI."""

    cli = Cli("codex", PACKAGE, prompt_on_stdin=True)
    args = CodexArgs

    def launch(self, trial: Trial[CodexArgs]) -> Launch:
        """config.toml and the guide as AGENTS.md in CODEX_HOME."""
        codex_home = trial.home / ".codex"
        codex_home.mkdir(parents=True, exist_ok=True)
        (codex_home / "config.toml").write_text(config_toml(trial), encoding="utf-8")
        guide = out.guide_text(trial.bench.skill_dir)
        if guide:
            (codex_home / "AGENTS.md").write_text(guide + "\n", encoding="utf-8")
        loaded = out.skill_items(trial.bench.skill_dir if guide else None)
        loaded += out.workspace_instructions(trial.bench, ["AGENTS.md", "AGENTS.override.md"])
        argv = [str(trial.binary), "exec", "--json", "--skip-git-repo-check"]
        argv += ["--dangerously-bypass-approvals-and-sandbox", "-m", trial.args.model, *trial.args.flags, "-"]
        env = {"CODEX_HOME": str(codex_home), KEY_VAR: trial.key}
        return Launch(argv, env, loaded + out.mcp_items(trial.mcp))

    def read(self, trial: Trial[CodexArgs], done: Run) -> Result:
        """Usage from the session rollouts, the transcript from the --json events."""
        transcript, found = parse_events(done.lines)
        usage = usage_from_rollouts(trial.home / ".codex", trial.args.context_limit, trial.args.model)
        failed = found.get("failed")
        reason = None
        if failed is not None and _INFRA.search(failed):
            reason = failed[:300]
        elif done.returncode != 0 and not done.lines:
            reason = f"codex exited {done.returncode} before starting: {done.stderr[-300:]}"
        code = 1 if failed is not None and done.returncode == 0 else None
        return Result(usage, transcript, reason, exit_code=code)


ADAPTER = Codex()

if __name__ == "__main__":
    sys.exit(main(ADAPTER))
