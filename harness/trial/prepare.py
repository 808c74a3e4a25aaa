"""Prepare, the first stage of a trial: its folders and a fresh copy of the seed.

Nothing of the cell is in place yet: provisions, the baseline commit and the canaries are
the next stage's (`harness.trial.provision`). Every folder of the trial is in its run
directory, named by `harness.artifacts.names`. The folders the agent can write (workspace,
home, tmp, state, the outbox) are put on size-limited filesystems first, where the harness may
mount (`harness.sandbox.disk`), so the seed is copied straight onto them; they are copied out
and unmounted when the trial ends (`closing`).
"""

from __future__ import annotations

import errno
from dataclasses import dataclass
from pathlib import Path

from compiler.contract import Job
from harness.artifacts.names import (
    HOME_DIR,
    META_DIR,
    OUTBOX_DIR,
    SKILL_DIR,
    STATE_DIR,
    TMP_DIR,
    WORKSPACE_DIR,
)
from harness.sandbox import disk
from harness.trial import workspace
from harness.trial.environment import TrialPaths


@dataclass(frozen=True)
class Trial:
    """One trial being run: the job, where it runs, and its workspace."""

    job: Job
    project: Path
    """The project root (holds generated/, scenarios/...); job paths are relative to it."""
    paths: TrialPaths
    ws: workspace.Workspace
    disk: disk.TrialDisk | None = None
    """The size-limited filesystems of the agent's folders (None: none could be made, or no
    size limit is set)."""
    disk_note: str | None = None
    """Why a size limit that is set is not kept by the kernel (the watcher keeps it), else None."""


def trial_paths(job: Job, run_dir: Path, project: Path) -> TrialPaths:
    """Where the trial's files live, all inside its run directory but the shared agent cache."""
    return TrialPaths(
        run_dir=run_dir,
        workspace=run_dir / WORKSPACE_DIR,
        home=run_dir / HOME_DIR,
        tmp=run_dir / TMP_DIR,
        state=run_dir / STATE_DIR,
        shim_bin=run_dir / META_DIR / "bin",
        skill_dir=run_dir / SKILL_DIR if job.cell.provisions.skill_dir else None,
        agent_cache=project / ".cache" / "agents" / job.agent.id,
    )


def new_trial(job: Job, *, project: Path, run_dir: Path, limit_disk: bool = False) -> Trial:
    """The trial's paths and its workspace, a copy of the seed (read-only links left out).

    With `limit_disk`, the agent's folders go on size-limited filesystems first, where the harness
    may mount; the caller then owns `Trial.disk` and closes it when the trial ends. Until this
    returns they are its own: whatever ends it early (any exception) unmounts them.
    """
    paths = trial_paths(job, run_dir, project)
    made, note = _disk(job, paths) if limit_disk else (None, None)
    try:
        ws = _seed_copy(job, project, run_dir, limited=made is not None)
    except BaseException:  # nothing of the trial may stay mounted once it has failed to prepare
        if made is not None:
            made.close()
        raise
    return Trial(job=job, project=project, paths=paths, ws=ws, disk=made, disk_note=note)


def _seed_copy(job: Job, project: Path, run_dir: Path, *, limited: bool) -> workspace.Workspace:
    try:
        return workspace.create(
            project / job.scenario.seed, run_dir, exclude=tuple(job.cell.provisions.links)
        )
    except OSError as exc:
        if exc.errno == errno.ENOSPC and limited:
            raise workspace.WorkspaceError(
                f"the seed {job.scenario.seed} does not fit the workspace limit of {job.limits.workspace_mb} MB"
            ) from exc
        raise


def _disk(job: Job, paths: TrialPaths) -> tuple[disk.TrialDisk | None, str | None]:
    size, outbox = job.limits.workspace_mb, job.limits.outbox_mb
    if not size and not outbox:
        return None, None
    try:
        return disk.mount(
            paths.run_dir,
            (paths.workspace, paths.home, paths.tmp, paths.state),
            size_mb=size,
            outbox=paths.run_dir / OUTBOX_DIR,
            outbox_mb=outbox,
        ), None
    except disk.DiskUnavailable as exc:
        return None, str(exc)
