"""The scrubbed environment an adapter runs in (seed 000's adapter contract, plus assay's additions),
and the sandbox around it (`launcher`: mounts, limits, network).

Nothing of the host's environment passes except the names in `options.env_pass`; HOME is a
fresh folder in the run directory, so no host instruction file (~/.claude, ~/.codex, AGENTS.md
in HOME, git config) can reach the agent. The unscrubbed PATH is handed over only as
`BENCH_HOST_PATH`, for an adapter to locate its agent binary.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from compiler.contract import Job
from harness.artifacts.names import (
    AGENT_LOG,
    ANSWER_FILE,
    CONTEXT_FILE,
    OUTBOX_DIR,
    TRACE_FILE,
    TRANSCRIPT_FILE,
    USAGE_FILE,
)
from harness.sandbox.isolation import Isolation, Mount, SandboxLimits
from harness.sandbox.launch import CommandHook, Launcher
from harness.sandbox.scenario import View
from harness.trial.agent import CODE_ROOT, host_files

if TYPE_CHECKING:
    from harness.trial.provision import Provided

SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
TRACE_VAR = "BENCH_TRACE"
"""Where the agent may read what it ran (a mirror the collector keeps; never the graded trace)."""


@dataclass(frozen=True)
class TrialPaths:
    """Where one trial's files live (all absolute)."""

    run_dir: Path
    workspace: Path
    home: Path
    tmp: Path
    state: Path
    shim_bin: Path
    skill_dir: Path | None
    agent_cache: Path

    @property
    def usage(self) -> Path:
        return self.run_dir / USAGE_FILE

    @property
    def transcript(self) -> Path:
        return self.run_dir / TRANSCRIPT_FILE

    @property
    def context(self) -> Path:
        return self.run_dir / CONTEXT_FILE

    @property
    def trace(self) -> Path:
        return self.run_dir / TRACE_FILE

    @property
    def agent_log(self) -> Path:
        return self.run_dir / AGENT_LOG


def factor_var(factor: str) -> str:
    """BENCH_<FACTOR>: the factor name upper-cased, anything but letters and digits as '_'."""
    return "BENCH_" + re.sub(r"[^A-Za-z0-9]", "_", factor).upper()


def build(
    job: Job,
    paths: TrialPaths,
    *,
    agent_args: Mapping[str, Any],
    host_env: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The complete environment of the adapter (and of canaries and setup commands).

    Args:
        job: The trial.
        paths: The trial's folders.
        agent_args: The adapter arguments as resolved by the runner (script inlined...).
        host_env: The harness's environment (default: os.environ).
    """
    host = dict(os.environ if host_env is None else host_env)
    env: dict[str, str] = {name: host[name] for name in job.options.env_pass if name in host}
    prov = job.cell.provisions
    env.update(
        {
            "HOME": str(paths.home),
            "XDG_CONFIG_HOME": str(paths.home / ".config"),
            "XDG_CACHE_HOME": str(paths.home / ".cache"),
            "XDG_DATA_HOME": str(paths.home / ".local" / "share"),
            "TMPDIR": str(paths.tmp),
            "PATH": f"{paths.shim_bin}:{SYSTEM_PATH}",
            "LANG": host.get("LANG", "C.UTF-8") if "LANG" in job.options.env_pass else "C.UTF-8",
            "PWD": str(paths.workspace),
        }
    )
    for factor, level in job.cell.levels.items():
        env[factor_var(factor)] = level
    env.update(
        {
            "BENCH_CELL": job.cell.name,
            "BENCH_SCENARIO": job.scenario.id,
            "BENCH_TRIAL": str(job.trial),
            "BENCH_AGENT": job.agent.id,
            "BENCH_AGENT_ARGS": json.dumps(dict(agent_args), sort_keys=True),
            "BENCH_AGENT_CACHE": str(paths.agent_cache),
            "BENCH_HOST_PATH": host.get("PATH", SYSTEM_PATH),
            "BENCH_RUN_DIR": str(paths.run_dir),
            "BENCH_WORKSPACE": str(paths.workspace),
            "BENCH_USAGE": str(paths.usage),
            "BENCH_TRANSCRIPT": str(paths.transcript),
            "BENCH_CONTEXT": str(paths.context),
            TRACE_VAR: str(paths.trace),
            "BENCH_ANSWER": str(paths.workspace / ANSWER_FILE),
            "BENCH_STATE_DIR": str(paths.state),
            "BENCH_NETWORK_ALLOWED": "1" if prov.network else "0",
        }
    )
    if paths.skill_dir is not None:
        env["BENCH_SKILL_DIR"] = str(paths.skill_dir)
    if job.agent.model:
        env["BENCH_MODEL"] = job.agent.model
    if prov.adapter:
        env["BENCH_ADAPTER_OPTIONS"] = json.dumps(prov.adapter, sort_keys=True)
    if prov.mcp_servers:
        env["BENCH_MCP_SERVERS"] = json.dumps(
            {k: v.model_dump(mode="json") for k, v in prov.mcp_servers.items()}, sort_keys=True
        )
    if job.scenario.workdir is not None:  # the workspace as the agent sees it
        workdir = job.scenario.workdir
        env.update(PWD=workdir, BENCH_WORKSPACE=workdir, BENCH_ANSWER=f"{workdir}/answer.json")
    env.update(job.scenario.env)
    env.update(prov.env)
    env.update(job.agent.env)
    return env


def launcher(
    job: Job,
    paths: TrialPaths,
    env: dict[str, str],
    provided: Provided,
    iso: Isolation,
    extra: tuple[Mount, ...] = (),
    prefix: tuple[str, ...] = (),
    seen: View | None = None,
    hook: CommandHook | None = None,
    disks: Mapping[str, Path] | None = None,
) -> Launcher:
    """The sandbox every command of the trial runs in: setup, canaries and the agent (and the
    scenario's own view: its workspace at its workdir, its mounts, its environment), each behind
    `hook`, the tool runner, when the cell traces a tool; `disks`, the trial's size-limited
    filesystems by limit name (`harness.sandbox.disk`)."""
    lim = job.limits
    # Only the adapters package, not the checkout that holds it: that may hold scenarios and .git.
    code_dirs = {Path(sys.prefix), Path(sys.base_prefix), CODE_ROOT / "adapters"}
    outbox = paths.run_dir / OUTBOX_DIR  # the sandbox sees it at the run dir's path (pathsafe.collect)
    outbox.mkdir(exist_ok=True)
    own = [paths.workspace, paths.home, paths.tmp, paths.state]
    assay_dir = paths.shim_bin.parent  # the shim, and the oracle's copy of the reference
    # The agent cache also at its real path: a pip venv's scripts name their interpreter by it.
    cache_real = paths.agent_cache.resolve()
    read_only = [
        p for p in (assay_dir, paths.skill_dir, paths.agent_cache, cache_real) if p is not None and p.exists()
    ]
    read_only = list(dict.fromkeys(read_only))
    shown = [*own, *read_only, *code_dirs]
    # A command agent's adapter named by its host path (seed 000's --agent-cmd), read-only, unless
    # a folder the sandbox shows at its own path holds it already.
    adapter_files = [f for f in host_files(job) if not any(f.is_relative_to(d) for d in shown)]
    mounts = (
        # The sandbox's run directory is an outbox: adapters write usage.jsonl & co. where their
        # environment says, but never see job.json, snapshots or records, nor plant links there.
        Mount(src=outbox, dest=paths.run_dir, writable=True),
        *(Mount(src=d, dest=d, writable=True) for d in own),
        *(Mount(src=d, dest=d, writable=False) for d in read_only),
        *provided.mounts,
        *(Mount(src=d, dest=d, writable=False) for d in sorted(code_dirs)),
        *extra,
        *(seen.mounts if seen else ()),
        *(Mount(src=d, dest=d, writable=False) for d in (seen.read_only if seen else ())),
        *(Mount(src=f, dest=f, writable=False) for f in adapter_files),
    )
    return Launcher(
        isolation=iso,
        cwd=seen.cwd if seen and seen.cwd else paths.workspace,
        host_cwd=paths.workspace,
        env=env,
        home=paths.home,
        mounts=mounts,
        # Under network: on with a gateway (prefix: its forwarder) the sandbox keeps its own network
        # namespace as under off, and reaches the network only through the gateway's proxy.
        network=job.cell.provisions.network and not prefix,
        limits=SandboxLimits(
            memory_mb=lim.memory_mb,
            cpus=lim.cpus,
            pids=lim.pids,
            file_size_mb=lim.file_size_mb,
            workspace_mb=lim.workspace_mb,
            outbox_mb=lim.outbox_mb,
        ),
        ro_binds=provided.ro_binds,
        outbox=(outbox, paths.run_dir),
        prefix=prefix,
        hook=hook,
        watch=(paths.workspace, paths.home, paths.tmp, paths.state),
        disks=dict(disks or {}),
        label=job.id,
    )


INSTRUCTION_FILES = (
    "AGENTS.md",
    "CLAUDE.md",
    "GEMINI.md",
    "CONVENTIONS.md",
    ".cursorrules",
    ".aider.conf.yml",
)
"""Files agent CLIs load from the folders above their working directory."""


def ancestor_instruction_files(workspace: Path) -> list[str]:
    """Instruction files in the folders above the workspace, which an unconfined agent may load.

    Under an isolation that shows the agent only its own folders they are unreachable; under
    `none` the runner records them, since the agent can see them.
    """
    found: list[str] = []
    for folder in workspace.resolve().parents:
        found.extend(str(folder / name) for name in INSTRUCTION_FILES if (folder / name).is_file())
    return found
