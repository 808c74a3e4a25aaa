"""The adapter contract's inputs, shared by every real-CLI adapter: reading BENCH_*, finding the
CLI, its API key and its environment.

Contract (seed 000 plus assay's additions), read from the environment:

- cwd is the workspace; the prompt arrives on stdin.
- `BENCH_<FACTOR>`: the cell's level per factor (e.g. `BENCH_KNOWLEDGE=web`).
- `BENCH_SKILL_DIR`, `BENCH_HOST_PATH` (only for finding the CLI), `BENCH_RUN_DIR`,
  `BENCH_USAGE`, `BENCH_TRANSCRIPT`, `BENCH_CONTEXT` (output paths).
- `BENCH_AGENT_ARGS`: JSON object of the agent spec's arguments (`AgentArgs`).
- `BENCH_AGENT_CACHE`: folder where agent CLIs are installed (`<pkg>-<version>/`).
- `BENCH_MCP_SERVERS`: JSON `{name: {"command": [...], "env": {...}}}` of the cell's MCP servers.
- `BENCH_ADAPTER_OPTIONS`: JSON object of the cell's adapter options (e.g. `{"web": true}`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from adapters.install import Package, dir_name

INFRA_EXIT = 75
_RESERVED = {
    "SKILL_DIR",
    "HOST_PATH",
    "RUN_DIR",
    "USAGE",
    "TRANSCRIPT",
    "CONTEXT",
    "AGENT_ARGS",
    "AGENT_CACHE",
    "MCP_SERVERS",
    "ADAPTER_OPTIONS",
    "STATE_DIR",
    "CELL",
    "SCENARIO",
    "TRIAL",
    "AGENT",
    "WORKSPACE",
    "TRACE",
    "ANSWER",
    "NETWORK_ALLOWED",
    "MODEL",
}
"""BENCH_* names that are not factor levels (seed 000's and the runner's)."""
INFRA_STATUSES = {401, 403, 408, 429, 500, 502, 503, 504, 529}


class AdapterError(Exception):
    """A configuration problem the adapter cannot run with (exit 2)."""


class InfraFailure(Exception):
    """A provider or infrastructure failure: the adapter exits 75 so the runner retries."""


class McpServerArg(BaseModel):
    """An MCP server (stdio transport)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: list[str]
    """argv that starts the server."""
    env: dict[str, str] = Field(default_factory=dict)
    """Extra environment for the server process."""


class AgentArgs(BaseModel):
    """`BENCH_AGENT_ARGS` keys every adapter understands; adapters add their own."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = "scripted-model"
    """Model id passed to the CLI."""
    base_url: str | None = None
    """Model endpoint (e.g. the scripted server's URL); None = the CLI's default provider."""
    api_key_env: str | None = None
    """Name of the environment variable holding the API key (pass it with env_pass)."""
    api_key: str | None = None
    """A literal API key, for scripted servers only (used when api_key_env is unset)."""
    bin: str | None = None
    """Path of the CLI; default: found in BENCH_AGENT_CACHE, then on BENCH_HOST_PATH."""
    package: str | None = None
    """Package the CLI was installed from (for finding it in the cache)."""
    version: str | None = None
    """Package version to pick in the cache; default: the newest there."""
    flags: list[str] = Field(default_factory=list)
    """Extra command-line arguments appended to the CLI's."""
    env: dict[str, str] = Field(default_factory=dict)
    """Extra environment for the CLI."""
    max_turns: int | None = None
    """Turn limit, for CLIs that have one."""
    max_retries: int = 2
    """The CLI's own retries of a failed request, for CLIs that have the setting."""
    web: bool | None = None
    """Web tools on/off; default: on only when BENCH_KNOWLEDGE is `web`."""
    mcp_servers: dict[str, McpServerArg] = Field(default_factory=dict)
    """MCP servers in addition to BENCH_MCP_SERVERS."""
    context_limit: int | None = None
    """Context window to report when the CLI does not say."""


A = TypeVar("A", bound=AgentArgs)


@dataclass(frozen=True)
class Bench:
    """The adapter's inputs."""

    workspace: Path
    prompt: str
    levels: dict[str, str]
    skill_dir: Path | None
    host_path: str
    run_dir: Path
    usage: Path | None
    transcript: Path | None
    context: Path | None
    cache: Path | None
    raw_args: dict[str, Any]
    mcp: dict[str, McpServerArg]
    options: dict[str, Any]

    def args(self, model: type[A]) -> A:
        """The agent arguments validated by the adapter's own model."""
        try:
            return model.model_validate(self.raw_args)
        except ValueError as exc:
            raise AdapterError(f"BENCH_AGENT_ARGS: {exc}") from exc

    def web(self, args: AgentArgs) -> bool:
        """Whether web tools are on in this cell."""
        if args.web is not None:
            return args.web
        if "web" in self.options:
            return bool(self.options["web"])
        return self.levels.get("knowledge") == "web"

    def mcp_servers(self, args: AgentArgs) -> dict[str, McpServerArg]:
        """The cell's MCP servers plus the agent spec's."""
        return {**self.mcp, **args.mcp_servers}


def _json_env(environ: dict[str, str], name: str) -> dict[str, Any]:
    raw = environ.get(name, "").strip()
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise AdapterError(f"{name} is not JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise AdapterError(f"{name} must be a JSON object")
    return value


def read_bench(environ: dict[str, str] | None = None, prompt: str | None = None) -> Bench:
    """Read the contract from the environment and stdin."""
    env = dict(os.environ if environ is None else environ)

    def path(name: str) -> Path | None:
        return Path(env[name]).resolve() if env.get(name) else None

    run_dir = path("BENCH_RUN_DIR") or Path.cwd() / ".bench-run"
    run_dir.mkdir(parents=True, exist_ok=True)
    levels = {k[6:].lower(): v for k, v in env.items() if k.startswith("BENCH_") and k[6:] not in _RESERVED}
    mcp = {
        name: McpServerArg.model_validate(spec) for name, spec in _json_env(env, "BENCH_MCP_SERVERS").items()
    }
    return Bench(
        workspace=Path.cwd(),
        prompt=sys.stdin.read() if prompt is None else prompt,
        levels=levels,
        skill_dir=path("BENCH_SKILL_DIR"),
        host_path=env.get("BENCH_HOST_PATH", env.get("PATH", "")),
        run_dir=run_dir,
        usage=path("BENCH_USAGE"),
        transcript=path("BENCH_TRANSCRIPT"),
        context=path("BENCH_CONTEXT"),
        cache=path("BENCH_AGENT_CACHE"),
        raw_args=_json_env(env, "BENCH_AGENT_ARGS"),
        mcp=mcp,
        options=_json_env(env, "BENCH_ADAPTER_OPTIONS"),
    )


def find_cli(bench: Bench, args: AgentArgs, package: Package) -> Path:
    """The CLI to run: args.bin, else the cache (npm `node_modules/.bin` or a pip `venv/bin`),
    else BENCH_HOST_PATH."""
    if args.bin:
        return Path(args.bin)
    name = args.package or package.name
    if bench.cache is not None and bench.cache.is_dir():
        prefix = dir_name(name, "")
        dirs = [
            d
            for d in bench.cache.iterdir()
            if d.name.startswith(prefix) and (args.version is None or d.name == dir_name(name, args.version))
        ]
        for folder in sorted(dirs, key=lambda d: _version_key(d.name[len(prefix) :]), reverse=True):
            for candidate in (
                folder / "node_modules" / ".bin" / package.bin,
                folder / "venv" / "bin" / package.bin,
            ):
                if candidate.exists():
                    return candidate
    found = shutil.which(package.bin, path=bench.host_path)
    if found is None:
        raise AdapterError(
            f"{package.bin} not found: set bin in BENCH_AGENT_ARGS, install {name} into "
            "BENCH_AGENT_CACHE, or put it on the host PATH"
        )
    return Path(found)


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version))


def api_key(args: AgentArgs, fallback: str) -> str:
    """The API key: from args.api_key_env, else args.api_key, else a placeholder for scripted
    servers. A named but missing variable is an infrastructure (auth) failure."""
    if args.api_key_env:
        value = os.environ.get(args.api_key_env)
        if not value:
            raise InfraFailure(f"API key variable {args.api_key_env} is not set")
        return value
    return args.api_key or fallback


def v1_url(base_url: str) -> str:
    """An OpenAI-style base URL: `/v1` appended when it is missing."""
    base = base_url.rstrip("/")
    return base if base.endswith("/v1") else base + "/v1"


def agent_env(bench: Bench, home: Path, extra: dict[str, str]) -> dict[str, str]:
    """The CLI's environment: ours without BENCH_*, a per-trial HOME, then `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BENCH_")}
    home.mkdir(parents=True, exist_ok=True)
    # PWD too: some CLIs (Bun-built ones) take their project dir from it rather than getcwd()
    env.update(
        HOME=str(home),
        PWD=str(bench.workspace),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        XDG_STATE_HOME=str(home / ".local" / "state"),
    )
    env.update(extra)
    return env
