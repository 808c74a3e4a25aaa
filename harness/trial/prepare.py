"""Prepare, the first stage of a trial: its folders and a fresh copy of the seed.

Nothing of the cell is in place yet: provisions, the baseline commit and the canaries are
the next stage's (`harness.trial.provision`). Every folder of the trial is in its run
directory, named by `harness.artifacts.names`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from compiler.contract import Job
from harness.artifacts.names import HOME_DIR, META_DIR, SKILL_DIR, STATE_DIR, TMP_DIR, WORKSPACE_DIR
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


def new_trial(job: Job, *, project: Path, run_dir: Path) -> Trial:
    """The trial's paths and its workspace, a copy of the seed (read-only links left out)."""
    paths = trial_paths(job, run_dir, project)
    ws = workspace.create(project / job.scenario.seed, run_dir, exclude=tuple(job.cell.provisions.links))
    return Trial(job=job, project=project, paths=paths, ws=ws)
