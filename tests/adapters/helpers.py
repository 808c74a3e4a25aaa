"""Run an adapter for real (`python -m adapters.<name>`) against the scripted model server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from adapters.install import dir_name, known
from adapters.schema import AgentInfo, ContextReport, TranscriptEvent, UsageRow
from harness.modelserver import LogRecord, ScriptedModelServer

ROOT = Path(__file__).resolve().parents[2]
PROMPT = "Create hello.txt containing hi and make greet return hi."
Serve = Callable[..., ScriptedModelServer]
"""The `model_server` fixture: starts a scripted model server for a script."""


def agent_cache() -> Path:
    """Where `nox -s agents` installs the CLIs (ASSAY_AGENT_CACHE overrides)."""
    return Path(os.environ.get("ASSAY_AGENT_CACHE", ROOT / ".cache" / "agents"))


def require_cli(adapter: str) -> Path:
    """The adapter's CLI installed in the agent cache, or skip the test with the reason."""
    cache, package = agent_cache(), known()[adapter]
    for folder in sorted(cache.glob(dir_name(package.name, "") + "*"), reverse=True):
        for candidate in (
            folder / "node_modules" / ".bin" / package.bin,
            folder / "venv" / "bin" / package.bin,
        ):
            if candidate.exists():
                return candidate
    pytest.skip(f"{package.name} is not installed in {cache} (run `nox -s agents`)")


@dataclass
class Trial:
    """One adapter run and everything it left."""

    returncode: int
    workspace: Path
    run_dir: Path
    stderr: str

    def usage(self) -> list[UsageRow]:
        path = self.run_dir / "usage.jsonl"
        return [UsageRow.model_validate_json(x) for x in path.read_text().splitlines() if x]

    def transcript(self) -> list[TranscriptEvent]:
        path = self.run_dir / "transcript.jsonl"
        return [TranscriptEvent.model_validate_json(x) for x in path.read_text().splitlines() if x]

    def context(self) -> ContextReport:
        return ContextReport.model_validate_json((self.run_dir / "context.json").read_text())

    def info(self) -> AgentInfo:
        return AgentInfo.model_validate_json((self.run_dir / "agent.json").read_text())


def run_adapter(
    name: str,
    *,
    workspace: Path,
    run_dir: Path,
    prompt: str,
    args: dict[str, Any],
    levels: dict[str, str] | None = None,
    extra_env: dict[str, str] | None = None,
    timeout: float = 240,
) -> Trial:
    """Run `python -m adapters.<name>` under the seed-000 contract."""
    run_dir.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("BENCH_")}
    env.update(
        {
            "PYTHONPATH": str(ROOT),
            "BENCH_HOST_PATH": os.environ.get("PATH", ""),
            "BENCH_RUN_DIR": str(run_dir),
            "BENCH_USAGE": str(run_dir / "usage.jsonl"),
            "BENCH_TRANSCRIPT": str(run_dir / "transcript.jsonl"),
            "BENCH_CONTEXT": str(run_dir / "context.json"),
            "BENCH_AGENT_ARGS": json.dumps(args),
            "BENCH_AGENT_CACHE": str(agent_cache()),
        }
    )
    env.update({f"BENCH_{k.upper()}": v for k, v in (levels or {}).items()})
    env.update(extra_env or {})
    done = subprocess.run(
        [sys.executable, "-m", f"adapters.{name}"],
        input=prompt,
        text=True,
        cwd=workspace,
        env=env,
        capture_output=True,
        timeout=timeout,
    )
    return Trial(done.returncode, workspace, run_dir, done.stderr)


def cli_trial(adapter: str, server: ScriptedModelServer, workspace: Path, tmp_path: Path, **kw: Any) -> Trial:
    """Run a real-CLI adapter on the `workspace` fixture against a scripted model server, with the
    CLI's own retries off (args in `kw["args"]` go over that); skip when the CLI is not installed."""
    require_cli(adapter)
    args = {"base_url": server.url, "max_retries": 0, **kw.pop("args", {})}
    run_dir = tmp_path / "run"
    return run_adapter(adapter, workspace=workspace, run_dir=run_dir, prompt=PROMPT, args=args, **kw)


def totals(rows: list[UsageRow]) -> tuple[int, int]:
    """(input incl. cache, output) summed over usage rows."""
    return (sum(r.input + r.cache_read + r.cache_write for r in rows), sum(r.output for r in rows))


def server_totals(
    records: list[LogRecord], *, kinds: tuple[str, ...] = ("main", "side", "exhausted")
) -> tuple[int, int]:
    """(input, output) the server reported, over answered model requests."""
    chosen = [r for r in records if r.kind in kinds]
    return (sum(r.input_tokens for r in chosen), sum(r.output_tokens for r in chosen))
