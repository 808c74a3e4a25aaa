"""What every real-CLI adapter shares: reading the BENCH_* contract, finding the CLI, running it,
and writing the normalised outputs.

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
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from adapters._cli import Run, cli_version, kill_tree, launch_argv, run_cli
from adapters.schema import AgentInfo, ContextItem, ContextReport, TranscriptEvent, UsageRow

__all__ = [
    "Run",
    "cli_version",
    "kill_tree",
    "launch_argv",
    "run_cli",
]  # re-exported: adapters import them from here

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


def cache_dir_name(package: str, version: str) -> str:
    """Folder name of an installed package in the agent cache: `@scope/name` -> `scope-name-V`."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", package.lstrip("@")) + f"-{version}"


def find_cli(bench: Bench, args: AgentArgs, *, package: str, name: str) -> Path:
    """The CLI to run: args.bin, else the cache (npm `node_modules/.bin` or a pip `venv/bin`),
    else BENCH_HOST_PATH."""
    if args.bin:
        return Path(args.bin)
    package = args.package or package
    if bench.cache is not None and bench.cache.is_dir():
        prefix = cache_dir_name(package, "")
        dirs = [
            d
            for d in bench.cache.iterdir()
            if d.name.startswith(prefix)
            and (args.version is None or d.name == cache_dir_name(package, args.version))
        ]
        for folder in sorted(dirs, key=lambda d: _version_key(d.name[len(prefix) :]), reverse=True):
            for candidate in (folder / "node_modules" / ".bin" / name, folder / "venv" / "bin" / name):
                if candidate.exists():
                    return candidate
    found = shutil.which(name, path=bench.host_path)
    if found is None:
        raise AdapterError(
            f"{name} not found: set bin in BENCH_AGENT_ARGS, install {package} into "
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


def write_jsonl(path: Path | None, rows: Iterable[BaseModel]) -> None:
    """Write rows atomically (temp file, then rename)."""
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(r.model_dump_json(exclude_none=True) + "\n" for r in rows), encoding="utf-8")
    tmp.replace(path)


def write_json(path: Path | None, model: BaseModel) -> None:
    """Write one model as JSON atomically."""
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(model.model_dump_json(indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)


@dataclass
class Outcome:
    """What an adapter hands back to `finish`."""

    info: AgentInfo
    usage: list[UsageRow]
    transcript: list[TranscriptEvent]
    loaded: list[ContextItem]


def finish(bench: Bench, outcome: Outcome) -> int:
    """Write usage, transcript, context and agent.json; return the adapter's exit code."""
    write_jsonl(bench.usage, outcome.usage)
    write_jsonl(bench.transcript, outcome.transcript)
    write_json(bench.context, ContextReport(loaded=outcome.loaded))
    write_json(bench.run_dir / "agent.json", outcome.info)
    if outcome.info.infra_failure:
        return INFRA_EXIT
    code = outcome.info.exit_code
    return 0 if code == 0 else 1


def workspace_instructions(bench: Bench, names: Iterable[str]) -> list[ContextItem]:
    """Instruction files present in the workspace that the agent reads by convention."""
    return [
        ContextItem(kind="instructions", name=n, path=n, source="workspace")
        for n in names
        if (bench.workspace / n).is_file()
    ]


def install_skills(skill_dir: Path | None, dest: Path) -> list[ContextItem]:
    """Copy a skill dir into `dest/<skill>/`: each subfolder with a SKILL.md is a skill; a folder
    that has SKILL.md itself is one skill; a plain folder of guides becomes one skill named after
    it, with a SKILL.md that points at its files."""
    if skill_dir is None:
        return []
    if not skill_dir.is_dir():
        raise AdapterError(f"BENCH_SKILL_DIR {skill_dir} is not a folder")
    skills = [d for d in sorted(skill_dir.iterdir()) if (d / "SKILL.md").is_file()]
    if (skill_dir / "SKILL.md").is_file() or not skills:
        skills = [skill_dir]
    items = []
    for src in skills:
        target = dest / src.name
        shutil.copytree(src, target, dirs_exist_ok=True)
        if not (target / "SKILL.md").is_file():
            files = sorted(p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file())
            listing = "\n".join(f"- {target / f}" for f in files)
            (target / "SKILL.md").write_text(
                f"---\nname: {src.name}\ndescription: Guide for this project's tools; read it before "
                f"starting.\n---\n\nRead these files:\n{listing}\n",
                encoding="utf-8",
            )
        items.append(ContextItem(kind="skill", name=src.name, path=str(src)))
    return items


def guide_text(skill_dir: Path | None) -> str:
    """All markdown/text of a skill dir concatenated (for agents that take one instruction file)."""
    if skill_dir is None:
        return ""
    parts = []
    for path in sorted(skill_dir.rglob("*")):
        if path.is_file() and path.suffix.lower() in (".md", ".txt", ".rst", ""):
            rel = path.relative_to(skill_dir).as_posix()
            parts.append(f"<!-- {rel} -->\n{path.read_text(encoding='utf-8', errors='replace')}")
    return "\n\n".join(parts)


def main_guard(run: Any) -> int:
    """Map adapter exceptions to exit codes: 75 infra, 2 configuration; print the reason."""
    try:
        return int(run())
    except InfraFailure as exc:
        print(f"infrastructure failure: {exc}", file=sys.stderr)
        return INFRA_EXIT
    except AdapterError as exc:
        print(f"adapter error: {exc}", file=sys.stderr)
        return 2
