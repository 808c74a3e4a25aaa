"""Check commands in the same isolation as the agent: they execute code the agent wrote.

The grader runs each check in a scratch copy of the workspace (grader files overlaid; the
snapshot pass uses copies of its own). A check command is wrapped so that it sees the folder
it runs in read-write (bound when it starts: the wrapper is built before that folder is
known), a fresh HOME, the toolchain and the folders it needs read-only (the cell's PATH
tools), with the network off; not the project, the run directory, or any other trial.
A check whose `cwd` is a subfolder sees only that subfolder.

    wrap = check_wrapper(select(job.options.isolation), home=scratch / "home", read_only=tools)
    CheckContext(..., wrap=wrap)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from harness.sandbox.isolation.base import Isolation, Mount, SandboxSpec

Wrapper = Callable[[Sequence[str]], list[str]]


def check_wrapper(
    isolation: Isolation,
    *,
    home: Path,
    read_only: Sequence[Path] = (),
    mounts: Sequence[Mount] = (),
    cwd_map: tuple[Path, Path] | None = None,
) -> Wrapper | None:
    """A wrapper confining check commands, or None when `isolation` cannot confine here.

    None for `none` and for an isolation whose probe fails: the caller keeps its own
    (weaker) wrapper, and says so. `mounts` and `cwd_map` give a scenario's view (its workspace
    at its workdir, its mounts: `harness.sandbox.scenario`); without `cwd_map` the command's
    folder is bound at its own path.
    """
    if isolation.name == "none" or isolation.probe() is not None:
        return None
    home.mkdir(parents=True, exist_ok=True)
    binds = (
        Mount(home, home, writable=True),
        *(Mount(p, p, writable=False) for p in read_only if p.exists()),
        *mounts,
    )

    return CheckWrapper(isolation, home, binds, cwd_map)


@dataclass(frozen=True)
class CheckWrapper:
    """Wraps a check command's argv in the isolation; every command gets `home` as HOME."""

    isolation: Isolation
    home: Path
    binds: tuple[Mount, ...]
    cwd_map: tuple[Path, Path] | None
    init: bool = False
    """Commands start as the sandbox's init (`SandboxSpec.init`): a batch server kept across runs."""

    def as_init(self) -> CheckWrapper:
        """The same confinement for a server that is the sandbox's init (`harness.sandbox.batch_warm`)."""
        return replace(self, init=True)

    def identity(self) -> tuple[object, ...]:
        """What makes two wrappers confine alike (the isolation by its kind and name, not by the
        instance): a warm server started by one serves the other's commands."""
        kind = type(self.isolation)
        return (
            kind.__module__,
            kind.__qualname__,
            self.isolation.name,
            self.home,
            self.binds,
            self.cwd_map,
            self.init,
        )

    def __call__(self, argv: Sequence[str]) -> list[str]:
        spec = SandboxSpec(
            argv=["env", f"HOME={self.home}", *argv],
            cwd=Path("."),
            env={},
            home=self.home,
            mounts=self.binds,
            network=False,
            bind_cwd=self.cwd_map is None,
            cwd_map=self.cwd_map,
            init=self.init,
        )
        return self.isolation.wrap(spec)
