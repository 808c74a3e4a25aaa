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

from adapters import _outputs as out
from adapters._cli import Run, launch_argv
from adapters._common import AdapterError, AgentArgs, v1_url
from adapters._run import Cli, Launch, Result, Trial, main
from adapters.install import Package
from adapters.schema import TranscriptEvent, UsageRow

PACKAGE = Package("pip", "mini-swe-agent", "2.4.6", "mini")
"""The CLI this adapter was driven end to end with (`python -m adapters.install mini_swe_agent`)."""

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
    code = "import importlib.metadata as m;print(m.version('mini-swe-agent'))"
    try:
        done = subprocess.run(
            [str(binary.parent / "python"), "-c", code], capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None


def build_argv(trial: Trial[MiniArgs], traj: Path) -> list[str]:
    """The command line; writes the guide config into the run dir when there is a guide."""
    args, bench = trial.args, trial.bench
    config = "mini_textbased.yaml" if args.text_mode else "mini.yaml"
    model = args.model if "/" in args.model else f"openai/{args.model}"
    argv = [*launch_argv(trial.binary), "-y", "--exit-immediately", "-l", "0", "-c", config, "-m", model]
    if args.text_mode:
        argv += ["--model-class", "litellm_textbased"]
    if args.base_url:
        argv += ["-c", f"model.model_kwargs.api_base={v1_url(args.base_url)}"]
    # step_limit 0 is unlimited: a model that never calls a tool would loop on format errors
    argv += ["-c", f"agent.step_limit={args.max_turns or DEFAULT_STEP_LIMIT}"]
    guide = out.guide_text(bench.skill_dir)
    if guide:
        original = yaml.safe_load(_package_file(trial.binary, f"config/{config}").read_text())
        system = original["agent"]["system_template"] + "\n\n# Project guide\n\n" + guide
        extra = bench.run_dir / "guide.yaml"
        extra.write_text(yaml.safe_dump({"agent": {"system_template": system}}), encoding="utf-8")
        argv += ["-c", str(extra)]
    return [*argv, *args.flags, "-t", bench.prompt, "-o", str(traj)]


def _usage(t: float | None, response: dict[str, Any], limit: int | None) -> list[UsageRow]:
    usage = response.get("usage") or {}
    if not usage:
        return []
    cached = int((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
    reasoning = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens")
    row = out.usage_row(
        t or 0.0,
        input=int(usage.get("prompt_tokens") or 0) - cached,
        output=int(usage.get("completion_tokens") or 0),
        cache_read=cached,
        reasoning=int(reasoning or 0),
        limit=limit,
        model=response.get("model"),
    )
    return [row]


def _calls(t: float | None, message: dict[str, Any], actions: list[Any]) -> list[TranscriptEvent]:
    """Tool calls of an assistant message (text mode: its parsed bash actions)."""
    events = []
    for call in message.get("tool_calls") or []:
        fn = call.get("function") or {}
        try:
            arguments: Any = json.loads(fn.get("arguments") or "{}")
        except json.JSONDecodeError:
            arguments = fn.get("arguments")
        events.append(out.tool_call(t, fn.get("name"), arguments, call.get("id")))
    if not message.get("tool_calls"):
        for action in actions:
            events.append(
                out.tool_call(t, "bash", action.get("command") if isinstance(action, dict) else action)
            )
    return events


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
            rows += _usage(t, extra.get("response") or {}, context_limit)
            events += [out.message(t, "assistant", text)] if text else []
            events += _calls(t, message, extra.get("actions") or [])
        elif role == "tool" or (role == "user" and "returncode" in extra):
            output = str(extra.get("raw_output", text))
            code, call_id = extra.get("returncode"), message.get("tool_call_id")
            events.append(out.tool_result(t, output, exit_code=code, call_id=call_id, tool="bash"))
        elif role in ("user", "system"):
            events.append(out.message(t, role, text))
        elif role == "exit":
            events.append(out.notice(t, f"exit {extra.get('exit_status')}: {extra.get('submission', '')}"))
    return rows, events


class MiniSweAgent:
    """The mini-swe-agent CLI."""

    cli = Cli("mini_swe_agent", PACKAGE, takes_mcp=False, version_flag=None)
    args = MiniArgs

    def launch(self, trial: Trial[MiniArgs]) -> Launch:
        """Its config dir under HOME, no cost-map download, cost tracking that tolerates unknown models."""
        env = {
            "MSWEA_CONFIGURED": "true",
            "MSWEA_GLOBAL_CONFIG_DIR": str(trial.home / "mswea"),
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "MSWEA_COST_TRACKING": "ignore_errors",
            "MSWEA_SILENT_STARTUP": "1",
            "OPENAI_API_KEY": trial.key,
            "MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT": str(trial.args.max_retries + 1),
        }
        skill = trial.bench.skill_dir
        loaded = out.skill_items(skill if out.guide_text(skill) else None)
        return Launch(build_argv(trial, trial.bench.run_dir / "trajectory.json"), env, loaded)

    def read(self, trial: Trial[MiniArgs], done: Run) -> Result:
        """Usage and transcript from the trajectory; its exit status says whether it finished."""
        traj_path = trial.bench.run_dir / "trajectory.json"
        traj = json.loads(traj_path.read_text()) if traj_path.is_file() else {}
        usage, transcript = parse_trajectory(traj, trial.args.context_limit)
        info = traj.get("info") or {}
        status = str(info.get("exit_status") or "")
        reason = None
        tail = done.stderr[-2000:] + "".join(line for _, line in done.lines[-40:])
        if status != "Submitted" and any(w in status + " " + tail for w in _INFRA_WORDS):
            reason = f"mini-swe-agent stopped on a provider error ({status}): {tail[-300:]}"
        code = done.returncode if done.returncode != 0 else (0 if status == "Submitted" else 1)
        version = info.get("mini_version") or _version(trial.binary)
        return Result(usage, transcript, reason, exit_code=code, version=version)


ADAPTER = MiniSweAgent()

if __name__ == "__main__":
    sys.exit(main(ADAPTER))
