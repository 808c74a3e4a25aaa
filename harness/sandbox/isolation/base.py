"""The isolation plug-in point: how an untrusted command is confined.

The runner describes what the process may see and do as a `SandboxSpec`; an
`Isolation` turns it into the argv that enforces it (bwrap, unshare, or nothing).
The runner's process wrapper (`harness.sandbox.proc`) then executes that argv, owns the
timeout and output cap, and ends the whole process tree afterwards.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol


@dataclass(frozen=True)
class Mount:
    """A host path made visible inside the sandbox."""

    src: Path
    dest: Path
    writable: bool = False


@dataclass(frozen=True)
class Overlay:
    """A copy-on-write view of `lower` at `dest`: writes land in `upper` (needs an empty `work`
    on the same filesystem as `upper`); `lower` is never changed. Read the result with
    `harness.sandbox.isolation.overlay.materialize`."""

    lower: Path
    upper: Path
    work: Path
    dest: Path


@dataclass(frozen=True)
class SandboxLimits:
    """Resource limits; None means unlimited."""

    memory_mb: int | None = None
    cpus: float | None = None
    """CPUs the process tree may use (a CFS quota where a cpu cgroup can be made)."""
    pids: int | None = None
    file_size_mb: int | None = None
    cpu_s: int | None = None
    workspace_mb: int | None = None
    """Total size of the watched writable folders (see `harness.sandbox.isolation.limits`)."""
    outbox_mb: int | None = None
    """Total size of the watched outbox (what one command writes into its run directory)."""
    tmp_mb: int | None = 512
    """Size of the private /tmp (a tmpfs) where the isolation supports a size."""


@dataclass(frozen=True)
class SandboxSpec:
    """What a confined process may see and do."""

    argv: Sequence[str]
    cwd: Path
    """Working folder inside; Path(".") keeps the caller's (it must be mounted at the same path)."""
    env: Mapping[str, str]
    home: Path
    mounts: tuple[Mount, ...] = ()
    network: bool = False
    limits: SandboxLimits = field(default_factory=SandboxLimits)
    overlays: tuple[Overlay, ...] = ()
    """Copy-on-write mounts (bwrap, unshare); an isolation without them refuses the spec."""
    bind_cwd: bool = False
    """Also bind the caller's working folder read-write at its own path, resolved when the command
    starts (for wrappers built before the folder is known, e.g. check commands)."""
    cwd_map: tuple[Path, Path] | None = None
    """(host folder, sandbox folder): enter the caller's working folder, which lies under the host
    folder, at the same place under the sandbox folder, resolved when the command starts (a
    workspace a mount shows at a scenario's workdir). The mount itself is one of `mounts`."""
    init: bool = False
    """The command is the sandbox's init (pid 1, no reaper of the isolation's own: no process of the
    sandbox can signal it) and the sandbox's POSIX message queues are shown at /dev/mqueue: what a
    server kept across runs needs to end every other process and empty the IPC namespace between
    them (`harness.sandbox.batch_warm`). An isolation without a pid namespace ignores it; the
    server then finds it is not pid 1 and refuses."""


class Isolation(Protocol):
    """A way to confine a command."""

    name: str

    def probe(self) -> str | None:
        """None when this isolation works on this machine, else the reason it does not."""
        ...

    def wrap(self, spec: SandboxSpec) -> list[str]:
        """The argv that runs spec.argv confined as spec says.

        The caller executes it with exactly `spec.env` as the environment (never the
        harness's own): secrets then stay off the command line, where `ps` would show them.
        """
        ...

    @property
    def enforces_network_off(self) -> bool:
        """True when network=False is enforced (a run that needs it is invalid otherwise)."""
        ...
