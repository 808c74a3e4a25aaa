"""Running a command the way the agent runs: scrubbed env, isolation, read-only links, tree kill.

The runner builds one `Launcher` per trial; the canaries, the setup commands and the adapter
all go through it, so a canary proves exactly the environment the agent gets.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness import proc
from harness.isolation import Isolation, Mount, SandboxLimits, SandboxSpec


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

    def argv(self, argv: Sequence[str]) -> list[str]:
        """The isolation's argv for `argv` (before proc adds its namespace launcher)."""
        spec = SandboxSpec(
            argv=list(argv),
            cwd=self.cwd,
            env=dict(self.env),
            home=self.home,
            mounts=self.mounts,
            network=self.network,
            limits=self.limits,
        )
        return self.isolation.wrap(spec)

    def run(
        self,
        argv: Sequence[str],
        *,
        stdin: bytes | None = None,
        timeout_s: float | None = None,
        log: Path | None = None,
        output_cap: int = 10_000_000,
        capture: bool = False,
        cancel: threading.Event | None = None,
    ) -> proc.ProcResult:
        """Run `argv` confined, in the workspace, to its end or the harness's."""
        return proc.run(
            self.argv(argv),
            cwd=self.cwd,
            env=self.env,
            stdin=stdin,
            timeout_s=timeout_s,
            log=log,
            output_cap=output_cap,
            capture=capture,
            network=self.network,
            ro_binds=self.ro_binds,
            cancel=cancel,
        )

    def shell(self, command: str, **kwargs: object) -> proc.ProcResult:
        """Run a shell command line (see `run`)."""
        return self.run(["sh", "-c", command], **kwargs)  # type: ignore[arg-type]
