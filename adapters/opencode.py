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
    main_guard,
    read_bench,
    run_cli,
    workspace_instructions,
)
from adapters.schema import AgentInfo, ContextItem, TranscriptEvent, UsageRow

PACKAGE = "opencode-ai"
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


def config(bench: Bench, args: AgentArgs, key: str) -> dict[str, Any]:
    """The per-trial opencode config."""
    limit = args.context_limit or 200000
    base = (args.base_url or "").rstrip("/")
    if base and not base.endswith("/v1"):
        base += "/v1"
    web = "allow" if bench.web(args) else "deny"
    data: dict[str, Any] = {
        "autoupdate": False,
        "share": "disabled",
        "model": f"assay/{args.model}",
        "small_model": f"assay/{args.model}",
        "provider": {
            "assay": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "assay",
                "options": {"baseURL": base, "apiKey": key},
                "models": {args.model: {"name": args.model, "limit": {"context": limit, "output": 32000}}},
            }
        },
        "permission": {"edit": "allow", "bash": "allow", "webfetch": web, "websearch": web},
    }
    if bench.skill_dir:
        data["instructions"] = sorted(str(p) for p in bench.skill_dir.rglob("*.md"))
    servers = bench.mcp_servers(args)
    if servers:
        data["mcp"] = {
            n: {"type": "local", "command": s.command, "environment": s.env, "enabled": True}
            for n, s in servers.items()
        }
    return data


def parse_events(
    lines: list[tuple[float, str]], limit: int | None, model: str
) -> tuple[list[TranscriptEvent], list[UsageRow], list[str]]:
    """Transcript events, usage rows and error messages from `--format json` output."""
    events: list[TranscriptEvent] = []
    rows: list[UsageRow] = []
    errors: list[str] = []
    for t, line in lines:
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue
        kind, part = obj.get("type"), obj.get("part") or {}
        stamp = obj["timestamp"] / 1000 if isinstance(obj.get("timestamp"), int | float) else t
        if kind == "text":
            events.append(TranscriptEvent(t=stamp, type="message", role="assistant", text=part.get("text")))
        elif kind == "tool_use":
            state = part.get("state") or {}
            meta = state.get("metadata") or {}
            events.append(
                TranscriptEvent(
                    t=stamp,
                    type="tool_call",
                    role="assistant",
                    tool=part.get("tool"),
                    input=state.get("input"),
                    call_id=part.get("callID"),
                )
            )
            events.append(
                TranscriptEvent(
                    t=stamp,
                    type="tool_result",
                    role="tool",
                    tool=part.get("tool"),
                    output=str(state.get("output") or state.get("error") or ""),
                    exit_code=meta.get("exit")
                    if isinstance(meta.get("exit"), int)
                    else (1 if state.get("status") == "error" else None),
                    call_id=part.get("callID"),
                )
            )
        elif kind == "step_finish":
            tokens = part.get("tokens") or {}
            cache = tokens.get("cache") or {}
            inp, read, write = (
                int(tokens.get("input") or 0),
                int(cache.get("read") or 0),
                int(cache.get("write") or 0),
            )
            rows.append(
                UsageRow(
                    t=stamp,
                    input=inp,
                    output=int(tokens.get("output") or 0),
                    cache_read=read,
                    cache_write=write,
                    reasoning=int(tokens.get("reasoning") or 0),
                    context=inp + read + write,
                    context_limit=limit,
                    model=model,
                )
            )
        elif kind == "error":
            error = obj.get("error") or {}
            data = error.get("data") if isinstance(error, dict) else None
            message = (data or {}).get("message") if isinstance(data, dict) else None
            errors.append(str(message or error)[:500])
            events.append(TranscriptEvent(t=stamp, type="error", role="system", text=errors[-1]))
    return events, rows, errors


def run(bench: Bench) -> int:
    """Run one trial."""
    args = bench.args(OpencodeArgs)
    home = bench.run_dir / "home"
    binary = find_cli(bench, args, package=PACKAGE, name="opencode")
    try:
        key = api_key(args, "sk-scripted")
    except InfraFailure as exc:
        info = AgentInfo(agent="opencode", version=None, model=args.model, infra_failure=str(exc))
        return finish(bench, Outcome(info, [], [], []))
    cfg = bench.run_dir / "opencode.json"
    cfg.write_text(json.dumps(config(bench, args, key), indent=2), encoding="utf-8")
    env = agent_env(
        bench,
        home,
        {
            "OPENCODE_CONFIG": str(cfg),
            "OPENCODE_DISABLE_AUTOUPDATE": "1",
            "OPENCODE_DISABLE_MODELS_FETCH": "1",
            "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
            "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
            "OPENCODE_DISABLE_SHARE": "1",
            "OPENCODE_DISABLE_CLAUDE_CODE": "1",
            # opencode looks its plugin package up on the npm registry at start even with --pure; a
            # closed loopback port makes that fail at once instead of leaving the box
            "NPM_CONFIG_REGISTRY": DEAD_REGISTRY,
            "npm_config_registry": DEAD_REGISTRY,
            **args.env,
        },
    )
    # --print-logs at ERROR level: one `stream error` line per failed provider attempt
    argv = [
        str(binary),
        "run",
        "--pure",
        "--format",
        "json",
        "--title",
        "assay trial",
        "--print-logs",
        "--log-level",
        args.log_level,
        "-m",
        f"assay/{args.model}",
        *args.flags,
        bench.prompt,
    ]
    failures = 0

    def too_many_failures(line: str) -> bool:
        # opencode retries provider errors with backoff; stop it once max_retries is spent
        nonlocal failures
        if '"type":"error"' in line or 'message="stream error"' in line:
            failures += 1
        return failures > args.max_retries

    done = run_cli(
        argv,
        env=env,
        cwd=bench.workspace,
        stdin=None,
        log_dir=bench.run_dir,
        name="opencode",
        stop_when=too_many_failures,
    )
    transcript, usage, errors = parse_events(done.lines, args.context_limit or 200000, args.model)
    reason = None
    text = "\n".join(errors) + "\n" + done.stderr[-3000:]
    if (errors or done.returncode != 0) and _INFRA.search(text):
        reason = (errors[-1] if errors else done.stderr[-300:])[:300]
    loaded = (
        [ContextItem(kind="skill", name=bench.skill_dir.name, path=str(bench.skill_dir))]
        if bench.skill_dir
        else []
    )
    loaded += workspace_instructions(bench, ["AGENTS.md"])
    loaded += [ContextItem(kind="mcp_server", name=n) for n in bench.mcp_servers(args)]
    info = AgentInfo(
        agent="opencode",
        version=cli_version(binary, env),
        model=args.model,
        binary=str(binary),
        exit_code=1 if errors and done.returncode == 0 else done.returncode,
        infra_failure=reason,
    )
    return finish(bench, Outcome(info, usage, transcript, loaded))


def main() -> int:
    """Entry point."""
    return main_guard(lambda: run(read_bench()))


if __name__ == "__main__":
    sys.exit(main())
