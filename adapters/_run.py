"""One trial of a real agent CLI: the run every CLI adapter shares, and the `CliAdapter` protocol
that says only what differs between CLIs.

An adapter module defines `ADAPTER` (a `CliAdapter`) and ends with `sys.exit(main(ADAPTER))`;
the runner starts it as `python -m adapters.<name>` (docs/agents.md). The shared run, in order:

1. read the contract (`read_bench`) and the adapter's own arguments model (bad ones: exit 2);
2. refuse MCP servers when the CLI takes none (exit 2), find the CLI, resolve the API key
   (a named variable that is unset is an infrastructure failure: exit 75);
3. `adapter.launch`: write the CLI's config under the per-trial HOME, say its command line,
   its own environment variables and what it loads into its context;
4. run it with that HOME and no BENCH_* variable, stopping it after `max_retries` failed
   provider attempts when it would retry on its own for minutes;
5. remove the caches the CLI leaves in the workspace (they are not the agent's work);
6. `adapter.read`: usage, transcript and any provider failure from what the CLI logged;
7. write usage.jsonl, transcript.jsonl, context.json and agent.json; exit 75 on an
   infrastructure failure, else 0 when the CLI succeeded and 1 when it did not.
"""

from __future__ import annotations

import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from adapters._cli import Run, cli_version, run_cli
from adapters._common import (
    INFRA_EXIT,
    A,
    AdapterError,
    AgentArgs,
    Bench,
    InfraFailure,
    McpServerArg,
    agent_env,
    api_key,
    find_cli,
    read_bench,
)
from adapters._outputs import write_outputs
from adapters.install import Package
from adapters.schema import AgentInfo, ContextItem, TranscriptEvent, UsageRow

A_co = TypeVar("A_co", bound=AgentArgs, covariant=True)


@dataclass(frozen=True)
class Cli:
    """How the shared run treats one agent CLI."""

    agent: str
    """Agent name written to agent.json (the adapter's short name)."""
    package: Package
    """Where the CLI comes from: `python -m adapters.install` installs it, the run finds it."""
    key_fallback: str = "sk-scripted"
    """API key when the arguments name none (scripted model servers accept any)."""
    prompt_on_stdin: bool = False
    """Feed the prompt on the CLI's stdin (else the command line carries it)."""
    takes_mcp: bool = True
    """Whether the CLI can be given MCP servers; if not, a cell that has some is refused."""
    retry_line: str | None = None
    """Regex of an output line reporting one failed provider attempt, for CLIs that retry for
    minutes with no setting for it: past `max_retries` of them the CLI is stopped."""
    leaves: str | None = None
    """Glob of caches the CLI leaves in the workspace, removed after the run."""
    version_flag: str | None = "--version"
    """How the CLI prints its version (None: the adapter's `read` says it)."""


@dataclass(frozen=True)
class Trial(Generic[A_co]):
    """What the shared run resolved before the adapter launches its CLI."""

    bench: Bench
    args: A_co
    binary: Path
    key: str

    @property
    def home(self) -> Path:
        """The CLI's per-trial HOME, under the run dir."""
        return self.bench.run_dir / "home"

    @property
    def mcp(self) -> dict[str, McpServerArg]:
        """The cell's MCP servers plus the agent spec's."""
        return self.bench.mcp_servers(self.args)

    @property
    def web(self) -> bool:
        """Whether web tools are on in this cell."""
        return self.bench.web(self.args)


@dataclass(frozen=True)
class Launch:
    """How to start the CLI (its config files are written by then)."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    """The CLI's own variables (HOME and XDG folders are the run's; args.env goes over these)."""
    loaded: list[ContextItem] = field(default_factory=list)
    """What the treatment puts into the agent's context."""


@dataclass(frozen=True)
class Result:
    """What the adapter read back from the CLI's run."""

    usage: list[UsageRow]
    transcript: list[TranscriptEvent]
    infra_failure: str | None = None
    """Why the run failed for provider or infrastructure reasons, if it did (exit 75)."""
    exit_code: int | None = None
    """The run's outcome when the CLI's own exit code does not tell it."""
    version: str | None = None
    """The CLI's version when its run says it (else the `version_flag` answer)."""
    model: str | None = None
    """The model id as the CLI was given it, when the adapter rewrote args.model."""
    loaded: list[ContextItem] = field(default_factory=list)
    """Context the run itself reports having loaded (added to the launch's)."""


class CliAdapter(Protocol[A]):
    """What one agent CLI adds to the shared run."""

    cli: Cli
    args: type[A]
    """The arguments model (AgentArgs plus the CLI's own keys)."""

    def launch(self, trial: Trial[A]) -> Launch:
        """Write the CLI's config and say how to start it."""
        ...

    def read(self, trial: Trial[A], done: Run) -> Result:
        """Usage, transcript and failures from what the finished CLI logged."""
        ...


def run(adapter: CliAdapter[A], bench: Bench) -> int:
    """Run one trial of the adapter's CLI; return the adapter's exit code."""
    cli = adapter.cli
    args = bench.args(adapter.args)
    if not cli.takes_mcp and bench.mcp_servers(args):
        raise AdapterError(f"{cli.agent} has no MCP support; this cell's MCP servers cannot be given")
    binary = find_cli(bench, args, cli.package)
    try:
        trial = Trial(bench, args, binary, api_key(args, cli.key_fallback))
    except InfraFailure as exc:
        info = AgentInfo(agent=cli.agent, version=None, model=args.model, infra_failure=str(exc))
        return _finish(bench, info, Result([], []), [])
    trial.home.mkdir(parents=True, exist_ok=True)
    launch = adapter.launch(trial)
    env = agent_env(bench, trial.home, {**launch.env, **args.env})
    version = cli_version(binary, env, cli.version_flag) if cli.version_flag else None
    before = set(bench.workspace.glob(cli.leaves)) if cli.leaves else set()
    done = run_cli(
        launch.argv,
        env=env,
        cwd=bench.workspace,
        stdin=bench.prompt if cli.prompt_on_stdin else None,
        log_dir=bench.run_dir,
        name=cli.package.bin,
        retry_line=re.compile(cli.retry_line) if cli.retry_line else None,
        max_retries=args.max_retries,
    )
    if cli.leaves:
        for path in set(bench.workspace.glob(cli.leaves)) - before:
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    result = adapter.read(trial, done)
    info = AgentInfo(
        agent=cli.agent,
        version=result.version or version,
        model=result.model or args.model,
        binary=str(binary),
        exit_code=done.returncode if result.exit_code is None else result.exit_code,
        infra_failure=result.infra_failure,
    )
    return _finish(bench, info, result, launch.loaded)


def _finish(bench: Bench, info: AgentInfo, result: Result, loaded: list[ContextItem]) -> int:
    write_outputs(bench, info, result.usage, result.transcript, loaded + result.loaded)
    if info.infra_failure:
        return INFRA_EXIT
    return 0 if info.exit_code == 0 else 1


def main(adapter: CliAdapter[Any]) -> int:
    """The adapter process: one trial under the contract. An infrastructure failure exits 75, a
    configuration the adapter cannot run with exits 2, each with its reason on stderr."""
    try:
        return run(adapter, read_bench())
    except InfraFailure as exc:
        print(f"infrastructure failure: {exc}", file=sys.stderr)
        return INFRA_EXIT
    except AdapterError as exc:
        print(f"adapter error: {exc}", file=sys.stderr)
        return 2
