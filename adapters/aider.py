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
import shutil
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import Field

from adapters._common import (
    AdapterError,
    AgentArgs,
    Bench,
    InfraFailure,
    Outcome,
    agent_env,
    api_key,
    cli_version,
    find_cli,
    finish,
    launch_argv,
    main_guard,
    read_bench,
    run_cli,
    workspace_instructions,
)
from adapters.schema import AgentInfo, ContextItem, TranscriptEvent, UsageRow

PACKAGE = "aider-chat"
_RETRY = re.compile(r"^Retrying in [\d.]+ seconds")
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


def build_argv(binary: Path, bench: Bench, args: AiderArgs, key: str, model: str) -> list[str]:
    """The command line; writes the model metadata file into the run dir."""
    meta = bench.run_dir / "model_metadata.json"
    limit = args.context_limit or 200000
    meta.write_text(
        json.dumps(
            {
                model: {
                    "max_input_tokens": limit,
                    "max_tokens": 32000,
                    "max_output_tokens": 32000,
                    "input_cost_per_token": 0,
                    "output_cost_per_token": 0,
                    "litellm_provider": model.split("/")[0],
                    "mode": "chat",
                }
            }
        ),
        encoding="utf-8",
    )
    run = bench.run_dir
    argv = [
        *launch_argv(binary),
        "--model",
        model,
        "--model-metadata-file",
        str(meta),
        "--yes-always",
        "--no-pretty",
        "--no-fancy-input",
        "--no-show-model-warnings",
        "--no-check-update",
        "--no-show-release-notes",
        "--analytics-disable",
        "--no-detect-urls",
        "--no-gitignore",
        "--edit-format",
        args.edit_format,
        "--map-tokens",
        str(args.map_tokens),
        "--analytics-log",
        str(run / "aider-analytics.jsonl"),
        "--llm-history-file",
        str(run / "aider-llm-history.txt"),
        "--chat-history-file",
        str(run / "aider-chat-history.md"),
        "--input-history-file",
        str(run / "aider-input-history"),
        "--stream" if args.stream else "--no-stream",
        "--auto-commits" if args.auto_commits else "--no-auto-commits",
    ]
    if args.base_url:
        base = args.base_url.rstrip("/")
        argv += ["--openai-api-base", base if base.endswith("/v1") else base + "/v1"]
    argv += ["--openai-api-key", key]
    if bench.skill_dir:
        for path in sorted(p for p in bench.skill_dir.rglob("*") if p.is_file()):
            argv += ["--read", str(path)]
    return [*argv, *args.flags, "--message", bench.prompt, *args.files]


def usage_from_analytics(path: Path, limit: int | None, model: str) -> list[UsageRow]:
    """One row per `message_send` event."""
    rows: list[UsageRow] = []
    if not path.is_file():
        return rows
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue
        if obj.get("event") != "message_send":
            continue
        props = obj.get("properties") or {}
        inp = int(props.get("prompt_tokens") or 0)
        rows.append(
            UsageRow(
                t=float(obj.get("time") or 0),
                input=inp,
                output=int(props.get("completion_tokens") or 0),
                context=inp,
                context_limit=limit,
                model=props.get("main_model") or model,
            )
        )
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
            events.append(TranscriptEvent(t=stamp, type="message", role="assistant", text=text))
            events.extend(
                TranscriptEvent(t=stamp, type="tool_call", role="assistant", tool="edit", input={"path": m})
                for m in _edited_paths(text)
            )
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


def run(bench: Bench) -> int:
    """Run one trial."""
    args = bench.args(AiderArgs)
    if bench.mcp_servers(args):
        raise AdapterError("aider has no MCP support; this cell's MCP servers cannot be given")
    home = bench.run_dir / "home"
    binary = find_cli(bench, args, package=PACKAGE, name="aider")
    model = args.model if "/" in args.model else f"openai/{args.model}"
    try:
        key = api_key(args, "sk-scripted")
    except InfraFailure as exc:
        info = AgentInfo(agent="aider", version=None, model=model, infra_failure=str(exc))
        return finish(bench, Outcome(info, [], [], []))
    env = agent_env(
        bench,
        home,
        {
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "AIDER_ANALYTICS_DISABLE": "true",
            "AIDER_CHECK_UPDATE": "false",
            **args.env,
        },
    )
    before = {p.name for p in bench.workspace.glob(".aider*")}
    argv = build_argv(binary, bench, args, key, model)
    retries = 0

    def too_many_retries(line: str) -> bool:
        nonlocal retries
        retries += bool(_RETRY.match(line))
        return retries > args.max_retries

    done = run_cli(
        argv,
        env=env,
        cwd=bench.workspace,
        stdin=None,
        log_dir=bench.run_dir,
        name="aider",
        stop_when=too_many_retries,
    )
    for path in bench.workspace.glob(".aider*"):  # aider's caches, not the agent's work
        if path.name not in before:
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    usage = usage_from_analytics(bench.run_dir / "aider-analytics.jsonl", args.context_limit, model)
    output = "\n".join(line for _, line in done.lines) + done.stderr
    reason = None
    if retries > args.max_retries:
        reason = f"provider kept failing after {retries} retries: {_last_error(output)}"
    elif _PROVIDER_ERROR.search(output) and not usage and not any(b in output for b in _BAD_REQUEST):
        reason = f"provider error: {_last_error(output)}"
    loaded = (
        [ContextItem(kind="skill", name=bench.skill_dir.name, path=str(bench.skill_dir))]
        if bench.skill_dir
        else []
    )
    loaded += workspace_instructions(bench, ["CONVENTIONS.md"]) if "CONVENTIONS.md" in args.files else []
    info = AgentInfo(
        agent="aider",
        version=cli_version(binary, env),
        model=model,
        binary=str(binary),
        exit_code=done.returncode,
        infra_failure=reason,
    )
    transcript = transcript_from_history(bench.run_dir / "aider-llm-history.txt")
    return finish(bench, Outcome(info, usage, transcript, loaded))


def _last_error(output: str) -> str:
    errors: list[Any] = [m.group(0) for m in re.finditer(r"^.*(Error|Exception).*$", output, re.M)]
    return str(errors[-1])[:300] if errors else output[-300:]


def main() -> int:
    """Entry point."""
    return main_guard(lambda: run(read_bench()))


if __name__ == "__main__":
    sys.exit(main())
