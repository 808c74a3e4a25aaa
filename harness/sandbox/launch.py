"""Running a command the way the agent runs: scrubbed env, isolation, read-only links, tree kill.

The runner builds one `Launcher` per trial; the canaries, the setup commands and the adapter
all go through it, so a canary proves exactly the environment the agent gets. After every
command, before the harness reads anything the command wrote, every writable folder is
neutralised (`harness.sandbox.neutralise`: setuid bits stripped, odd files listed) and the
outbox is collected into the run directory.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from harness.artifacts.sandbox_sections import TreeReport
from harness.sandbox import proc
from harness.sandbox.gate import Gate
from harness.sandbox.isolation import Isolation, Mount, SandboxLimits, SandboxSpec, confines
from harness.sandbox.isolation.limits import confine
from harness.sandbox.neutralise import merged, neutralise
from harness.sandbox.pathsafe import collect


class CommandHook(Protocol):
    """Wraps each command of a trial and hears when it ended (the tool-use collector)."""

    def wrap(self, argv: Sequence[str], env: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
        """The command's argv and environment for this one launch."""
        ...

    def done(self) -> None:
        """The launch is over (its processes are gone)."""
        ...


@dataclass(frozen=True)
class Launcher:
    """Everything fixed about how a trial's commands run."""

    isolation: Isolation
    cwd: Path
    env: Mapping[str, str]
    home: Path
    mounts: tuple[Mount, ...]
    network: bool
    limits: SandboxLimits
    ro_binds: tuple[tuple[Path, Path], ...] = ()
    outbox: tuple[Path, Path] | None = None
    """(outbox, run dir): the sandbox sees the outbox at the run dir's path; collected after each command."""
    watch: tuple[Path, ...] = ()
    """Writable folders whose total size limits.workspace_mb caps."""
    disks: dict[str, Path] = field(default_factory=dict)
    """Size limit name -> a path on the size-limited filesystem that keeps it (`harness.sandbox.disk`)."""
    label: str = "trial"
    """Name of the command's cgroups (the job id)."""
    refused: list[str] = field(default_factory=list)
    """Outbox entries refused so far (symlinks, reserved names): evidence of tampering."""
    prefix: tuple[str, ...] = ()
    """Put before every argv inside the sandbox: the gateway's forwarder under `network: on`."""
    hook: CommandHook | None = None
    """Wraps every command inside the prefix (the tool runner of `harness.trial.tracing`)."""
    host_cwd: Path | None = None
    """Where the launcher itself starts when `cwd` exists only inside the sandbox (a scenario's
    workdir, where a mount shows the workspace); None: `cwd`."""
    enforced: dict[str, str] = field(default_factory=dict)
    """How each limit was enforced for the last command (`Confinement.enforced`)."""
    trees: dict[str, TreeReport] = field(default_factory=dict)
    """What the walks over each writable folder found (merged over commands), by name: the
    outbox is "outbox", a folder of the run directory its relative path."""

    def spec(self, argv: Sequence[str]) -> SandboxSpec:
        """What `argv` may see and do (a hook, when set, wraps it anew for each call)."""
        inner, env = self.hook.wrap(argv, self.env) if self.hook else (list(argv), dict(self.env))
        return SandboxSpec(
            argv=[*self.prefix, *inner],
            cwd=self.cwd,
            env=env,
            home=self.home,
            mounts=self.mounts,
            network=self.network,
            limits=self.limits,
        )

    def argv(self, argv: Sequence[str]) -> list[str]:
        """The isolation's argv for `argv` (before proc adds its namespace launcher)."""
        return self.isolation.wrap(self.spec(argv))

    def run(
        self,
        argv: Sequence[str],
        *,
        stdin: bytes | None = None,
        timeout_s: float | None = None,
        log: Path | None = None,
        output_cap: int | None = 10_000_000,
        capture: bool = False,
        cancel: threading.Event | None = None,
        gate: Gate | None = None,
    ) -> proc.ProcResult:
        """Run `argv` confined, in the workspace, to its end or the harness's; limits applied and reported.

        With a `gate`, argv is `gate.wrap(phase, command)`: a first phase in the same sandbox
        (`harness.sandbox.gate`)."""
        spec = self.spec(argv)
        outbox = (self.outbox[0],) if self.outbox is not None else ()
        with confine(
            self.isolation, spec, label=self.label, watch=self.watch, outbox=outbox, disks=self.disks
        ) as box:
            self.enforced.clear()
            self.enforced.update(box.enforced)
            try:
                done = self._run(
                    box.argv,
                    env=spec.env,
                    stdin=stdin,
                    timeout_s=timeout_s,
                    log=log,
                    output_cap=output_cap,
                    capture=capture,
                    cancel=cancel,
                    gate=gate,
                )
            finally:
                if self.hook is not None:
                    self.hook.done()
            hits = box.limits_hit(done.exit_code)
        self.neutralise()
        if self.outbox is not None:
            budget = self.limits.outbox_mb * 1024 * 1024 if self.limits.outbox_mb is not None else None
            self.refused.extend(collect(*self.outbox, budget=budget))
        return dataclasses.replace(done, limits_hit=hits) if hits else done

    def neutralise(self) -> None:
        """Walk every writable folder once: unsafe mode bits stripped, odd files listed in `trees`."""
        for mount in self.mounts:
            if mount.writable:
                name = self._tree_name(mount)
                self.trees[name] = merged(self.trees.get(name), neutralise(mount.src))

    def _tree_name(self, mount: Mount) -> str:
        if self.outbox is None:
            return str(mount.dest)
        outbox, run_dir = self.outbox
        if mount.src == outbox:
            return "outbox"
        return (
            mount.dest.relative_to(run_dir).as_posix() if run_dir in mount.dest.parents else str(mount.dest)
        )

    def _run(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        stdin: bytes | None,
        timeout_s: float | None,
        log: Path | None,
        output_cap: int | None,
        capture: bool,
        cancel: threading.Event | None,
        gate: Gate | None = None,
    ) -> proc.ProcResult:
        return proc.run(
            argv,
            cwd=self.host_cwd or self.cwd,
            env=env,
            stdin=stdin,
            timeout_s=timeout_s,
            log=log,
            output_cap=output_cap,
            capture=capture,
            network=self.network,
            ro_binds=self.ro_binds,
            cancel=cancel,
            namespaces=not confines(self.isolation),
            gate=gate,
        )

    def shell(self, command: str, **kwargs: object) -> proc.ProcResult:
        """Run a shell command line (see `run`)."""
        return self.run(["sh", "-c", command], **kwargs)  # type: ignore[arg-type]
