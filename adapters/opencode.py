"""opencode adapter: `python -m adapters.opencode` (prompt on stdin, cwd = workspace).

Runs `opencode run --pure --format json --title <t> -m assay/<model> <prompt>` with a per-trial
HOME (all of opencode's XDG data, config and cache under it) and a generated config
(OPENCODE_CONFIG) that declares one OpenAI-compatible provider `assay` at `base_url`, turns
off autoupdate and sharing, and allows edits and shell. The switches that keep it off the
network: OPENCODE_DISABLE_AUTOUPDATE, _MODELS_FETCH (the models catalogue), _LSP_DOWNLOAD,
_DEFAULT_PLUGINS, _SHARE, _CLAUDE_CODE (no reading of ~/.claude), `--pure` (no external
plugins), and the npm registry pointed at a closed loopback port (otherwise it looks its plugin
package up there at start; verified with a DNS sinkhole). A fixed `--title` skips the title-generation request.

BENCH_AGENT_ARGS keys (see `adapters._common.AgentArgs` for the shared ones):
    model (model id at the provider), base_url (`/v1` appended if missing), api_key_env /
    api_key, bin, package (default `opencode-ai`), version, flags, env, max_retries (provider
    errors tolerated before the adapter stops the CLI and exits 75), web, mcp_servers,
    context_limit (declared model context; default 200000), log_level (default ERROR).

Treatments: BENCH_SKILL_DIR -> its markdown files listed in the config's `instructions`; MCP
servers -> `mcp.<name>` local servers; web off -> `webfetch`/`websearch` denied.

Outputs: usage from `step_finish` events (final per-step token counts); the transcript from
the JSON events; exit 75 when an `error` event or the ERROR log on stderr names a provider
failure (opencode retries with a backoff of 2, 5, 10, 17, 40 s... so the adapter stops it
after max_retries failed attempts).
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

from adapters import _outputs as out
from adapters._cli import Run
from adapters._common import AgentArgs, v1_url
from adapters._run import Cli, Launch, Result, Trial, main
from adapters.install import Package
from adapters.schema import TranscriptEvent, UsageRow

PACKAGE = Package("npm", "opencode-ai", "1.18.33", "opencode")
"""The CLI this adapter was driven end to end with (`python -m adapters.install opencode`)."""

DEAD_REGISTRY = "http://127.0.0.1:9/"
_INFRA = re.compile(
    r"\b(429|5\d\d|401|403)\b|overloaded|rate limit|unauthori[sz]ed|ECONNREFUSED|"
    r"Unable to connect|APICallError|server error|too many requests",
    re.I,
)


class OpencodeArgs(AgentArgs):
    """opencode's BENCH_AGENT_ARGS."""

    log_level: str = "ERROR"
    """--log-level for the stderr log (ERROR is enough to see failed provider attempts)."""


def config(trial: Trial[AgentArgs]) -> dict[str, Any]:
    """The per-trial opencode config."""
    args = trial.args
    web = "allow" if trial.web else "deny"
    model = {"name": args.model, "limit": {"context": args.context_limit or 200000, "output": 32000}}
    options = {"baseURL": v1_url(args.base_url) if args.base_url else "", "apiKey": trial.key}
    data: dict[str, Any] = {
        "autoupdate": False,
        "share": "disabled",
        "model": f"assay/{args.model}",
        "small_model": f"assay/{args.model}",
        "provider": {
            "assay": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "assay",
                "options": options,
                "models": {args.model: model},
            }
        },
        "permission": {"edit": "allow", "bash": "allow", "webfetch": web, "websearch": web},
    }
    if trial.bench.skill_dir:
        data["instructions"] = sorted(str(p) for p in trial.bench.skill_dir.rglob("*.md"))
    if trial.mcp:
        data["mcp"] = {
            n: {"type": "local", "command": s.command, "environment": s.env, "enabled": True}
            for n, s in trial.mcp.items()
        }
    return data


def parse_events(
    lines: list[tuple[float, str]], limit: int | None, model: str
) -> tuple[list[TranscriptEvent], list[UsageRow], list[str]]:
    """Transcript events, usage rows and error messages from `--format json` output."""
    events: list[TranscriptEvent] = []
    rows: list[UsageRow] = []
    errors: list[str] = []
    for t, obj in out.json_lines(lines):
        kind, part = obj.get("type"), obj.get("part") or {}
        stamp = obj["timestamp"] / 1000 if isinstance(obj.get("timestamp"), int | float) else t
        if kind == "text":
            events.append(out.message(stamp, "assistant", part.get("text")))
        elif kind == "tool_use":
            events += _tool_use(stamp, part)
        elif kind == "step_finish":
            tokens = part.get("tokens") or {}
            cache = tokens.get("cache") or {}
            read, write = int(cache.get("read") or 0), int(cache.get("write") or 0)
            row = out.usage_row(
                stamp,
                input=int(tokens.get("input") or 0),
                output=int(tokens.get("output") or 0),
                cache_read=read,
                cache_write=write,
                reasoning=int(tokens.get("reasoning") or 0),
                limit=limit,
                model=model,
            )
            rows.append(row)
        elif kind == "error":
            error = obj.get("error") or {}
            data = error.get("data") if isinstance(error, dict) else None
            message = (data or {}).get("message") if isinstance(data, dict) else None
            errors.append(str(message or error)[:500])
            events.append(out.notice(stamp, errors[-1], error=True))
    return events, rows, errors


def _tool_use(t: float, part: dict[str, Any]) -> list[TranscriptEvent]:
    """A finished tool call: the call and its result."""
    state, tool, call_id = part.get("state") or {}, part.get("tool"), part.get("callID")
    exit_code = (state.get("metadata") or {}).get("exit")
    if not isinstance(exit_code, int):
        exit_code = 1 if state.get("status") == "error" else None
    output = str(state.get("output") or state.get("error") or "")
    return [
        out.tool_call(t, tool, state.get("input"), call_id),
        out.tool_result(t, output, exit_code=exit_code, call_id=call_id, tool=tool),
    ]


class Opencode:
    """The opencode CLI (retries with a growing backoff: stopped after max_retries failures)."""

    cli = Cli("opencode", PACKAGE, retry_line=r'"type":"error"|message="stream error"')
    args = OpencodeArgs

    def launch(self, trial: Trial[OpencodeArgs]) -> Launch:
        """A generated OPENCODE_CONFIG and every switch that keeps opencode off the network."""
        cfg = trial.bench.run_dir / "opencode.json"
        cfg.write_text(json.dumps(config(trial), indent=2), encoding="utf-8")
        switches = ("AUTOUPDATE", "MODELS_FETCH", "LSP_DOWNLOAD", "DEFAULT_PLUGINS", "SHARE", "CLAUDE_CODE")
        env = {"OPENCODE_CONFIG": str(cfg), **{f"OPENCODE_DISABLE_{s}": "1" for s in switches}}
        # opencode looks its plugin package up on the npm registry at start even with --pure; a
        # closed loopback port makes that fail at once instead of leaving the box
        env |= {"NPM_CONFIG_REGISTRY": DEAD_REGISTRY, "npm_config_registry": DEAD_REGISTRY}
        # --print-logs at ERROR level: one `stream error` line per failed provider attempt
        argv = [str(trial.binary), "run", "--pure", "--format", "json", "--title", "assay trial"]
        argv += ["--print-logs", "--log-level", trial.args.log_level, "-m", f"assay/{trial.args.model}"]
        loaded = out.skill_items(trial.bench.skill_dir)
        loaded += out.workspace_instructions(trial.bench, ["AGENTS.md"])
        argv = [*argv, *trial.args.flags, trial.bench.prompt]
        return Launch(argv, env, loaded + out.mcp_items(trial.mcp))

    def read(self, trial: Trial[OpencodeArgs], done: Run) -> Result:
        """Usage and transcript from the JSON events; failures from them and the ERROR log."""
        limit = trial.args.context_limit or 200000
        transcript, usage, errors = parse_events(done.lines, limit, trial.args.model)
        reason = None
        text = "\n".join(errors) + "\n" + done.stderr[-3000:]
        if (errors or done.returncode != 0) and _INFRA.search(text):
            reason = (errors[-1] if errors else done.stderr[-300:])[:300]
        code = 1 if errors and done.returncode == 0 else None
        return Result(usage, transcript, reason, exit_code=code)


ADAPTER = Opencode()

if __name__ == "__main__":
    sys.exit(main(ADAPTER))
