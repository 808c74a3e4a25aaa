"""Provisions of a cell: what the agent's world contains before it starts.

Files into the workspace or HOME, knowledge folders linked read-only, the skill folder, the
tracing shim in front of PATH, the state directory, and setup commands. Everything that is
not the workspace lives in the run directory, so a sandbox that shows the agent only the run
directory shows it everything it may use and nothing of the project.
"""

from __future__ import annotations

import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

from compiler.contract import Job
from harness.sandbox import proc
from harness.sandbox.isolation import Mount
from harness.trial import shim
from harness.trial.environment import SYSTEM_PATH, TrialPaths
from harness.trial.workspace import copy_tree


class ProvisionError(RuntimeError):
    """A provision could not be applied (missing source, failing setup command)."""


@dataclass(frozen=True)
class Provided:
    """What provisioning set up, for the launcher and run.json."""

    ro_binds: tuple[tuple[Path, Path], ...]
    mounts: tuple[Mount, ...]
    shimmed: tuple[str, ...]
    link_mode: str
    """How knowledge links are read-only: "bind" (a read-only mount) or "copy" (a read-only copy)."""


def _src(project: Path, rel: str, what: str) -> Path:
    path = (project / rel).resolve()
    if not path.exists():
        raise ProvisionError(f"{what} {rel!r} does not exist under {project}")
    return path


def _inside(root: Path, rel: str) -> Path:
    dest = (root / rel).resolve()
    if dest != root.resolve() and root.resolve() not in dest.parents:
        raise ProvisionError(f"{rel!r} leaves {root}")
    return dest


def _read_only_copy(src: Path, dest: Path) -> None:
    copy_tree(src, dest)
    for path in [dest, *dest.rglob("*")]:
        if not path.is_symlink():
            mode = path.stat().st_mode
            path.chmod(mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def make_dirs(paths: TrialPaths) -> None:
    """The trial's own folders (HOME, TMPDIR, state, shim)."""
    for folder in (paths.home, paths.tmp, paths.state, paths.shim_bin, paths.agent_cache):
        folder.mkdir(parents=True, exist_ok=True)


def apply(job: Job, *, project: Path, paths: TrialPaths) -> Provided:
    """Put the cell's provisions in place (before the baseline commit; they are not edits)."""
    prov = job.cell.provisions
    for dest, src in sorted(prov.files.items()):
        target = _inside(paths.workspace, dest)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(_src(project, src, "file"), target)
    for dest, src in sorted(prov.home_files.items()):
        target = _inside(paths.home, dest)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(_src(project, src, "home file"), target)
    skill = prov.skill_dir or None
    if skill is not None and paths.skill_dir is not None:
        copy_tree(_src(project, skill, "skill folder"), paths.skill_dir)
    binds: list[tuple[Path, Path]] = []
    mounts: list[Mount] = []
    mode = "bind" if proc.pidns_available() else "copy"
    for name, src in sorted(prov.links.items()):
        source = _src(project, src, "knowledge folder")
        target = _inside(paths.workspace, name)
        if mode == "bind":
            target.mkdir(parents=True, exist_ok=True)
            binds.append((source, target))
        else:
            _read_only_copy(source, target)
        mounts.append(Mount(src=source, dest=target, writable=False))
    path_dirs = [_src(project, rel, "PATH folder") for rel in prov.path]
    mounts.extend(Mount(src=d, dest=d, writable=False) for d in path_dirs)
    shimmed = shim.install(
        paths.shim_bin,
        path_dirs=path_dirs,
        trace_names=prov.trace,
        serve=prov.serve,
        trace_file=paths.trace,
        search_path=SYSTEM_PATH,
    )
    mounts.extend(Mount(src=real.parent, dest=real.parent, writable=False) for real in set(shimmed.values()))
    return Provided(
        ro_binds=tuple(binds), mounts=tuple(mounts), shimmed=tuple(sorted(shimmed)), link_mode=mode
    )
