"""aider adapter: `python -m adapters.aider` (prompt on stdin, cwd = workspace, a git repo).

Runs `aider --message <prompt> --yes-always --no-stream ...` with a per-trial HOME, analytics
and update checks off, a model metadata file for the model (so aider does not fetch litellm's
price list), its history files and analytics log in BENCH_RUN_DIR (never in the workspace), no
.gitignore edits, and no auto-commits by default. aider speaks Chat Completions without tools:
edits are SEARCH/REPLACE blocks in plain text (script them with the server's `echo` mode).

BENCH_AGENT_ARGS keys (see `adapters._common.AgentArgs` for the shared ones):
    model (a litellm id; a bare id gets `openai/`), base_url (`/v1` appended if missing),
    api_key_env / api_key, bin, package (default `aider-chat`), version, flags, env,
    max_retries (aider's own retry notices tolerated before the adapter stops it and exits 75),
    context_limit (written to the model metadata; default 200000),
    files (list: workspace files added to the chat), edit_format (default `diff`),
    auto_commits (bool, default false), map_tokens (repo-map size; default 1024, 0 = off),
    stream (bool, default false: with streaming aider counts tokens itself).

Treatments: BENCH_SKILL_DIR -> its files passed read-only with `--read`; MCP servers and web
tools: aider has neither (MCP servers are refused with an adapter error).

Outputs: usage from `--analytics-log` `message_send` events (the server's numbers under
`--no-stream`); the transcript from `--llm-history-file`.
"""

from __future__ import annotations

import json
import re
import sys
from datetime import datetime
from pathlib import Path

from pydantic import Field

from adapters import _outputs as out
from adapters._cli import Run, launch_argv
from adapters._common import AgentArgs, v1_url
from adapters._run import Cli, Launch, Result, Trial, main
from adapters.install import Package
from adapters.schema import TranscriptEvent, UsageRow

PACKAGE = Package("pip", "aider-chat", "0.86.2", "aider")
"""The CLI this adapter was driven end to end with (`python -m adapters.install aider`)."""

_PROVIDER_ERROR = re.compile(r"litellm\.(\w+Error|APIError)|AuthenticationError|Overloaded", re.I)
_BAD_REQUEST = ("BadRequestError", "ContextWindowExceeded", "NotFoundError")


class AiderArgs(AgentArgs):
    """aider's BENCH_AGENT_ARGS."""

    files: list[str] = Field(default_factory=list)
    """Workspace files added to the chat."""
    edit_format: str = "diff"
    """aider --edit-format."""
    auto_commits: bool = False
    """Let aider commit its edits."""
    map_tokens: int = 1024
    """Repo-map token budget (0 disables the repo map)."""
    stream: bool = False
    """Stream answers (aider then estimates tokens locally instead of using the server's)."""


def litellm_model(args: AgentArgs) -> str:
    """The model id as litellm takes it: a bare id is an OpenAI-compatible one."""
    return args.model if "/" in args.model else f"openai/{args.model}"


def build_argv(trial: Trial[AiderArgs]) -> list[str]:
    """The command line; writes the model metadata file into the run dir."""
    args, run, model = trial.args, trial.bench.run_dir, litellm_model(trial.args)
    meta = run / "model_metadata.json"
    limits = {
        "max_input_tokens": args.context_limit or 200000,
        "max_tokens": 32000,
        "max_output_tokens": 32000,
    }
    costs = {"input_cost_per_token": 0, "output_cost_per_token": 0}
    entry = {**limits, **costs, "litellm_provider": model.split("/")[0], "mode": "chat"}
    meta.write_text(json.dumps({model: entry}), encoding="utf-8")
    argv = [*launch_argv(trial.binary), "--model", model, "--model-metadata-file", str(meta)]
    argv += ["--yes-always", "--no-pretty", "--no-fancy-input", "--no-show-model-warnings"]
    argv += ["--no-check-update", "--no-show-release-notes", "--analytics-disable", "--no-detect-urls"]
    argv += ["--no-gitignore", "--edit-format", args.edit_format, "--map-tokens", str(args.map_tokens)]
    argv += ["--analytics-log", str(run / "aider-analytics.jsonl")]
    argv += ["--llm-history-file", str(run / "aider-llm-history.txt")]
    argv += ["--chat-history-file", str(run / "aider-chat-history.md")]
    argv += ["--input-history-file", str(run / "aider-input-history")]
    argv += ["--stream" if args.stream else "--no-stream"]
    argv += ["--auto-commits" if args.auto_commits else "--no-auto-commits"]
    if args.base_url:
        argv += ["--openai-api-base", v1_url(args.base_url)]
    argv += ["--openai-api-key", trial.key]
    if trial.bench.skill_dir:
        for path in sorted(p for p in trial.bench.skill_dir.rglob("*") if p.is_file()):
            argv += ["--read", str(path)]
    return [*argv, *args.flags, "--message", trial.bench.prompt, *args.files]


def usage_from_analytics(path: Path, limit: int | None, model: str) -> list[UsageRow]:
    """One row per `message_send` event."""
    rows: list[UsageRow] = []
    for obj in out.json_records([path]):
        props = obj.get("properties") or {}
        if obj.get("event") == "message_send":
            row = out.usage_row(
                float(obj.get("time") or 0),
                input=int(props.get("prompt_tokens") or 0),
                output=int(props.get("completion_tokens") or 0),
                limit=limit,
                model=props.get("main_model") or model,
            )
            rows.append(row)
    return rows


def transcript_from_history(path: Path) -> list[TranscriptEvent]:
    """Messages from the LLM history file (`ROLE text` blocks under timestamped headers)."""
    if not path.is_file():
        return []
    events: list[TranscriptEvent] = []
    blocks = re.split(r"^(?=(?:TO LLM|LLM RESPONSE) \d{4}-)", path.read_text(encoding="utf-8"), flags=re.M)
    for block in blocks:
        head, _, body = block.partition("\n")
        if head.startswith("LLM RESPONSE"):
            stamp = datetime.fromisoformat(head.split()[-1]).astimezone().timestamp()
            text = "\n".join(
                line[len("ASSISTANT ") :] if line.startswith("ASSISTANT ") else line
                for line in body.splitlines()
            ).strip()
            events.append(out.message(stamp, "assistant", text))
            events.extend(out.tool_call(stamp, "edit", {"path": m}) for m in _edited_paths(text))
    return events


def _edited_paths(text: str) -> list[str]:
    lines = text.splitlines()
    paths = []
    for i, line in enumerate(lines):
        if line.strip().startswith("<<<<<<< SEARCH"):
            back = [x.strip() for x in lines[max(0, i - 2) : i] if x.strip() and not x.startswith("```")]
            if back:
                paths.append(back[-1])
    return paths


def _last_error(output: str) -> str:
    errors = [m.group(0) for m in re.finditer(r"^.*(Error|Exception).*$", output, re.M)]
    return errors[-1][:300] if errors else output[-300:]


class Aider:
    """The aider CLI (retries with backoff for about a minute: stopped after max_retries)."""

    cli = Cli("aider", PACKAGE, takes_mcp=False, retry_line=r"^Retrying in [\d.]+ seconds", leaves=".aider*")
    args = AiderArgs

    def launch(self, trial: Trial[AiderArgs]) -> Launch:
        """Analytics and update checks off; the guide's files read-only."""
        env = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "AIDER_ANALYTICS_DISABLE": "true"}
        env["AIDER_CHECK_UPDATE"] = "false"
        loaded = out.skill_items(trial.bench.skill_dir)
        if "CONVENTIONS.md" in trial.args.files:
            loaded += out.workspace_instructions(trial.bench, ["CONVENTIONS.md"])
        return Launch(build_argv(trial), env, loaded)

    def read(self, trial: Trial[AiderArgs], done: Run) -> Result:
        """Usage from the analytics log, the transcript from the LLM history file."""
        run, model = trial.bench.run_dir, litellm_model(trial.args)
        usage = usage_from_analytics(run / "aider-analytics.jsonl", trial.args.context_limit, model)
        output = "\n".join(line for _, line in done.lines) + done.stderr
        reason = None
        if done.stopped:
            reason = f"provider kept failing after {done.retries} retries: {_last_error(output)}"
        elif _PROVIDER_ERROR.search(output) and not usage and not any(b in output for b in _BAD_REQUEST):
            reason = f"provider error: {_last_error(output)}"
        transcript = transcript_from_history(run / "aider-llm-history.txt")
        return Result(usage, transcript, reason, model=model)


ADAPTER = Aider()

if __name__ == "__main__":
    sys.exit(main(ADAPTER))
