"""What a scenario's sandbox shows: the workspace at its `workdir`, its mounts, its environment.

The agent (and a solution run by `assay import`), the checks and `assay validate` all build their
sandbox from `view(...)`, so the three see the same paths:

- the workspace (a trial's, or a scratch copy the checks judge) at `workdir` (else at its own path);
- each mount at its absolute path: read-only straight from the project, writable as a per-trial
  copy (`copy_mounts`) whose final state the checks judge, hidden ones (a suite's tests) to the
  checks only;
- the scenario environment's folders read-only, its `bin` folders first on PATH, and the
  scenario's `env:` variables.

A scenario that needs a view (a workdir or mounts) needs a sandbox that can mount: under the
`none` isolation it cannot run, and says so before any trial.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from compiler.contract import ScenarioJob, ScenarioMount
from harness.sandbox.isolation import Mount
from harness.sandbox.neutralise import remove_tree
from harness.sandbox.scenario_env import CannotRunHere, ScenarioEnv, ensure

MOUNTS_DIR = "mounts"
"""Run-directory folder of the per-trial copies of writable mounts."""


def needs_view(scenario: ScenarioJob) -> bool:
    """Whether the scenario shows anything at a path of its own choosing."""
    return scenario.workdir is not None or bool(scenario.mounts)


def mount_dir(root: Path, mount: ScenarioMount) -> Path:
    """Where a writable mount's copy lives under a run (or scratch) folder."""
    return root / MOUNTS_DIR / (mount.path.strip("/").replace("/", "-") or "root")


def copy_mounts(scenario: ScenarioJob, project: Path, root: Path, *, source: Path | None = None) -> None:
    """Fresh copies of the writable mounts under `root` (from the project, or from another run's copies)."""
    for m in scenario.mounts:
        if not m.writable:
            continue
        src = mount_dir(source, m) if source is not None else project / m.source
        dest = mount_dir(root, m)
        if dest.exists():
            remove_tree(dest)  # an earlier attempt's copy: the agent's, so any depth
        shutil.copytree(src, dest, symlinks=True)


@dataclass(frozen=True)
class View:
    """Mounts, working folder and environment of one sandboxed command."""

    mounts: tuple[Mount, ...]
    cwd: Path | None
    """The working folder inside (the workdir); None: the workspace at its own path."""
    env: dict[str, str] = field(default_factory=dict)
    """Variables to add (the scenario's `env:`)."""
    environment: ScenarioEnv | None = None
    read_only: tuple[Path, ...] = ()
    """Folders shown read-only at their own paths (the environment, its interpreter)."""

    @property
    def path_first(self) -> tuple[str, ...]:
        """The environment's `bin` folders, for the front of a PATH."""
        return tuple(str(b) for b in self.environment.bin_dirs) if self.environment else ()

    def variables(self, base: dict[str, str], *, after: str | None = None) -> dict[str, str]:
        """`base` with the scenario's variables (where base does not set them: a level's or an
        agent's own win) and the environment's folders first on PATH (after `after`, the tracing
        shim, when PATH starts with it: a traced tool stays traced)."""
        env = {**self.env, **base}
        if self.environment is None:
            return env
        path = env.get("PATH", "")
        head, _, rest = (
            path.partition(os.pathsep) if after and path.split(os.pathsep)[0] == after else ("", "", path)
        )
        env = self.environment.variables({**env, "PATH": rest})
        if head:
            env["PATH"] = os.pathsep.join([head, env["PATH"]])
        return env


def environment_of(scenario: ScenarioJob, project: Path) -> ScenarioEnv | None:
    """The scenario's built environment (building it once), or None when it declares none."""
    return ensure(scenario.environment, project) if scenario.environment is not None else None


def view(
    scenario: ScenarioJob,
    project: Path,
    workspace: Path,
    *,
    mounts_root: Path | None,
    checks: bool,
    environment: ScenarioEnv | None = None,
) -> View:
    """The sandbox view of `workspace` for the agent (checks=False) or the checks (checks=True).

    `mounts_root` holds the per-trial copies of writable mounts (`copy_mounts`); without one a
    writable mount is shown read-only from the project (nothing of its state is kept then).
    """
    mounts: list[Mount] = []
    if scenario.workdir is not None:
        mounts.append(Mount(src=workspace, dest=Path(scenario.workdir), writable=True))
    for m in scenario.mounts:
        if m.hidden and not checks:
            continue
        if m.writable and mounts_root is not None:
            mounts.append(Mount(src=mount_dir(mounts_root, m), dest=Path(m.path), writable=True))
        else:
            mounts.append(Mount(src=(project / m.source).resolve(), dest=Path(m.path), writable=False))
    read_only = environment.read_only if environment is not None else ()
    return View(
        mounts=tuple(mounts),
        cwd=Path(scenario.workdir) if scenario.workdir is not None else None,
        env=dict(scenario.env),
        environment=environment,
        read_only=tuple(read_only),
    )


def refuse_without_mounts(scenario: ScenarioJob, isolation_name: str) -> None:
    """A scenario with a workdir or mounts cannot run where nothing can be mounted."""
    if needs_view(scenario) and isolation_name == "none":
        raise CannotRunHere(
            f"cannot run here: scenario {scenario.id!r} shows folders at fixed paths "
            f"({', '.join(p for p in (scenario.workdir, *(m.path for m in scenario.mounts)) if p)}), "
            "which needs the bwrap or unshare isolation; this machine has neither working"
        )


def checks_view(
    scenario: ScenarioJob,
    project: Path,
    workspace: Path,
    scratch: Path,
    *,
    mounts_from: Path | None,
) -> View | None:
    """The view the checks judge `workspace` in (None: the scenario shows nothing of its own).

    Writable mounts are copied into `scratch` — from a run's final copies (`mounts_from`, when it
    holds them) or fresh from the project — so the checks see the state the agent left and never
    change it; hidden mounts are shown too. The environment is built when missing.
    """
    if not needs_view(scenario) and scenario.environment is None and not scenario.env:
        return None
    has_copies = mounts_from is not None and all(
        mount_dir(mounts_from, m).is_dir() for m in scenario.mounts if m.writable
    )
    copy_mounts(scenario, project, scratch, source=mounts_from if has_copies else None)
    environment = environment_of(scenario, project)
    return view(scenario, project, workspace, mounts_root=scratch, checks=True, environment=environment)


def prepare(scenarios: Iterable[tuple[ScenarioJob, str]], project: Path) -> None:
    """Before any trial: every scenario can run here (its isolation can mount what it shows, its
    interpreter exists, its environment builds, once). Raises CannotRunHere naming each one that
    cannot."""
    problems: list[str] = []
    seen: set[tuple[str, str]] = set()
    for scenario, isolation_name in scenarios:
        if (scenario.id, isolation_name) in seen:
            continue
        seen.add((scenario.id, isolation_name))
        try:
            refuse_without_mounts(scenario, isolation_name)
            environment_of(scenario, project)
        except CannotRunHere as exc:
            problems.append(f"{scenario.id}: {exc}")
    if problems:
        raise CannotRunHere(
            "cannot run here, before any trial:\n  "
            + "\n  ".join(problems)
            + "\n(leave those scenarios out with --scenario, or run them where they can run)"
        )
