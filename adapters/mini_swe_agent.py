"""mini-swe-agent adapter: `python -m adapters.mini_swe_agent` (prompt on stdin, cwd = workspace).

Runs `mini -y --exit-immediately -c mini.yaml -m <litellm model> -t <prompt> -o traj.json`
(tool-calling mode, one `bash` tool) with a per-trial HOME and MSWEA_GLOBAL_CONFIG_DIR, the
local litellm cost map (no price-list download at import), cost tracking that tolerates unknown
models, and no startup banner. The agent ends when a command prints
`COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT` first.

BENCH_AGENT_ARGS keys (see `adapters._common.AgentArgs` for the shared ones):
    model (a litellm id, e.g. `openai/scripted-model`; a bare id gets `openai/`), base_url
    (`/v1` appended if missing), api_key_env / api_key (OPENAI_API_KEY), bin, package (default
    `mini-swe-agent`), version, flags, env, max_turns (agent.step_limit, default 100), max_retries
    (MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT - 1), context_limit,
    text_mode (bool: `litellm_textbased` + `mini_textbased.yaml`, fenced `mswea_bash_command`).

Treatments: BENCH_SKILL_DIR -> the guide's text appended to the system template (the agent has
no instruction-file convention); MCP servers and web tools: mini-swe-agent has neither (MCP
servers are refused with an adapter error so a cell cannot silently lose its treatment).

Outputs: usage from the trajectory (each assistant message's `extra.response.usage`), the
transcript from its messages; exit 75 when the run ended on a provider/API exception.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from adapters._common import (
    AdapterError,
    AgentArgs,
    Bench,
    InfraFailure,
    Outcome,
    agent_env,
    api_key,
    find_cli,
    finish,
    guide_text,
    launch_argv,
    main_guard,
    read_bench,
    run_cli,
)
from adapters.schema import AgentInfo, ContextItem, TranscriptEvent, UsageRow

PACKAGE = "mini-swe-agent"
DEFAULT_STEP_LIMIT = 100
_INFRA_WORDS = (
    "RateLimitError",
    "InternalServerError",
    "ServiceUnavailable",
    "APIConnectionError",
    "AuthenticationError",
    "APIError",
    "Timeout",
    "overloaded",
    "529",
    "BadGateway",
)


class MiniArgs(AgentArgs):
    """mini-swe-agent's BENCH_AGENT_ARGS."""

    text_mode: bool = False
    """Use the text-based model class and config instead of tool calling."""


def _package_file(binary: Path, rel: str) -> Path:
    found = sorted(binary.parent.parent.glob(f"lib/python*/site-packages/minisweagent/{rel}"))
    if not found:
        raise AdapterError(f"cannot find minisweagent/{rel} next to {binary}")
    return found[0]


def _version(binary: Path) -> str | None:
    python = binary.parent / "python"
    try:
        done = subprocess.run(
            [str(python), "-c", "import importlib.metadata as m;print(m.version('mini-swe-agent'))"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None


def build_argv(binary: Path, bench: Bench, args: MiniArgs, traj: Path) -> list[str]:
    """The command line; writes the guide config into the run dir when there is a guide."""
    config = "mini_textbased.yaml" if args.text_mode else "mini.yaml"
    model = args.model if "/" in args.model else f"openai/{args.model}"
    argv = [*launch_argv(binary), "-y", "--exit-immediately", "-l", "0", "-c", config, "-m", model]
    if args.text_mode:
        argv += ["--model-class", "litellm_textbased"]
    if args.base_url:
        base = args.base_url.rstrip("/")
        base = base if base.endswith("/v1") else base + "/v1"
        argv += ["-c", f"model.model_kwargs.api_base={base}"]
    # step_limit 0 is unlimited: a model that never calls a tool would loop on format errors
    argv += ["-c", f"agent.step_limit={args.max_turns or DEFAULT_STEP_LIMIT}"]
    guide = guide_text(bench.skill_dir)
    if guide:
        original = yaml.safe_load(_package_file(binary, f"config/{config}").read_text())
        system = original["agent"]["system_template"] + "\n\n# Project guide\n\n" + guide
        extra = bench.run_dir / "guide.yaml"
        extra.write_text(yaml.safe_dump({"agent": {"system_template": system}}), encoding="utf-8")
        argv += ["-c", str(extra)]
    return [*argv, *args.flags, "-t", bench.prompt, "-o", str(traj)]


def parse_trajectory(
    traj: dict[str, Any], context_limit: int | None
) -> tuple[list[UsageRow], list[TranscriptEvent]]:
    """Usage rows and transcript events from a mini-swe-agent trajectory."""
    rows: list[UsageRow] = []
    events: list[TranscriptEvent] = []
    for message in traj.get("messages", []):
        role, extra = message.get("role"), message.get("extra") or {}
        t = extra.get("timestamp")
        t = float(t) if isinstance(t, int | float) else None
        content = message.get("content")
        text = content if isinstance(content, str) else json.dumps(content) if content else ""
        if role == "assistant":
            response = extra.get("response") or {}
            usage = response.get("usage") or {}
            if usage:
                details = usage.get("prompt_tokens_details") or {}
                cached = int(details.get("cached_tokens") or 0)
                inp = int(usage.get("prompt_tokens") or 0) - cached
                out_details = usage.get("completion_tokens_details") or {}
                rows.append(
                    UsageRow(
                        t=t or 0.0,
                        input=inp,
                        output=int(usage.get("completion_tokens") or 0),
                        cache_read=cached,
                        reasoning=int(out_details.get("reasoning_tokens") or 0),
                        context=inp + cached,
                        context_limit=context_limit,
                        model=response.get("model"),
                    )
                )
            if text:
                events.append(TranscriptEvent(t=t, type="message", role="assistant", text=text))
            for call in message.get("tool_calls") or []:
                fn = call.get("function") or {}
                try:
                    arguments: Any = json.loads(fn.get("arguments") or "{}")
                except json.JSONDecodeError:
                    arguments = fn.get("arguments")
                events.append(
                    TranscriptEvent(
                        t=t,
                        type="tool_call",
                        role="assistant",
                        tool=fn.get("name"),
                        input=arguments,
                        call_id=call.get("id"),
                    )
                )
            if not message.get("tool_calls"):
                for action in extra.get("actions") or []:
                    events.append(
                        TranscriptEvent(
                            t=t,
                            type="tool_call",
                            role="assistant",
                            tool="bash",
                            input=action.get("command") if isinstance(action, dict) else action,
                        )
                    )
        elif role == "tool" or (role == "user" and "returncode" in extra):
            events.append(
                TranscriptEvent(
                    t=t,
                    type="tool_result",
                    role="tool",
                    tool="bash",
                    output=str(extra.get("raw_output", text)),
                    exit_code=extra.get("returncode"),
                    call_id=message.get("tool_call_id"),
                )
            )
        elif role in ("user", "system"):
            events.append(TranscriptEvent(t=t, type="message", role=role, text=text))
        elif role == "exit":
            events.append(
                TranscriptEvent(
                    t=t,
                    type="system",
                    role="system",
                    text=f"exit {extra.get('exit_status')}: {extra.get('submission', '')}",
                )
            )
    return rows, events


def run(bench: Bench) -> int:
    """Run one trial."""
    args = bench.args(MiniArgs)
    if bench.mcp_servers(args):
        raise AdapterError("mini-swe-agent has no MCP support; this cell's MCP servers cannot be given")
    home = bench.run_dir / "home"
    binary = find_cli(bench, args, package=PACKAGE, name="mini")
    try:
        key = api_key(args, "sk-scripted")
    except InfraFailure as exc:
        info = AgentInfo(agent="mini_swe_agent", version=None, model=args.model, infra_failure=str(exc))
        return finish(bench, Outcome(info, [], [], []))
    env = agent_env(
        bench,
        home,
        {
            "MSWEA_CONFIGURED": "true",
            "MSWEA_GLOBAL_CONFIG_DIR": str(home / "mswea"),
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "MSWEA_COST_TRACKING": "ignore_errors",
            "MSWEA_SILENT_STARTUP": "1",
            "OPENAI_API_KEY": key,
            "MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT": str(args.max_retries + 1),
            **args.env,
        },
    )
    traj_path = bench.run_dir / "trajectory.json"
    argv = build_argv(binary, bench, args, traj_path)
    loaded = (
        [ContextItem(kind="skill", name=bench.skill_dir.name, path=str(bench.skill_dir))]
        if bench.skill_dir and guide_text(bench.skill_dir)
        else []
    )
    done = run_cli(argv, env=env, cwd=bench.workspace, stdin=None, log_dir=bench.run_dir, name="mini")
    traj = json.loads(traj_path.read_text()) if traj_path.is_file() else {}
    usage, transcript = parse_trajectory(traj, args.context_limit)
    info_block = traj.get("info") or {}
    status = str(info_block.get("exit_status") or "")
    reason = None
    tail = done.stderr[-2000:] + "".join(line for _, line in done.lines[-40:])
    if status != "Submitted" and any(w in status + " " + tail for w in _INFRA_WORDS):
        reason = f"mini-swe-agent stopped on a provider error ({status}): {tail[-300:]}"
    code = done.returncode if done.returncode != 0 else (0 if status == "Submitted" else 1)
    info = AgentInfo(
        agent="mini_swe_agent",
        version=info_block.get("mini_version") or _version(binary),
        model=args.model,
        binary=str(binary),
        exit_code=code,
        infra_failure=reason,
    )
    return finish(bench, Outcome(info, usage, transcript, loaded))


def main() -> int:
    """Entry point."""
    return main_guard(lambda: run(read_bench()))


if __name__ == "__main__":
    sys.exit(main())
