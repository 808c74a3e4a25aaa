"""Multi-session runs and the treatment's state directory (seed 002's Step, StepRecord, SeedFunc).

A scenario's `steps:` run as ordered agent sessions in one trial. What may cross a session
boundary is exactly what the run measures:

- the working tree carries over, unless a step says `fresh_repo: true` (then it starts again
  from the cell's starting state);
- the state directory (`$BENCH_STATE_DIR`, preserved as `state/`) carries over only when the
  cell's provisions say `state_dir: true`. Under any other cell — the control — it is moved
  to `steps/step-NN/state/` after each session, so the next session starts with it empty:
  nothing persists, and nothing is lost for a human reading the run;
- evidence files exist only during their step (`harness.trial` places and removes them).

Seeding (`state_setup:` of the cell's levels, then of the scenario) runs only under a
`state_dir: true` cell, from inside the state directory, and must write only there: a
command that changes the working tree is an error of the run, never a silent provision.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from compiler.contract import Job, Step
from harness.artifacts.names import META_DIR, SETUP_LOG, STATE_DIR, step_dir_name
from harness.sandbox import pathsafe
from harness.sandbox.launch import Launcher
from harness.trial import workspace
from harness.trial.environment import TrialPaths


class StateSetupError(RuntimeError):
    """A state_setup command failed or wrote outside the state directory."""


def sessions(job: Job) -> list[Step]:
    """The ordered sessions of a trial: the scenario's steps, or one step of its prompt."""
    return list(job.scenario.steps) or [Step(name="main", prompt=job.scenario.prompt)]


def persists(job: Job) -> bool:
    """Whether the state directory carries over between sessions (the cell says `state_dir: true`)."""
    return job.cell.provisions.state_dir


def _tree(root: Path) -> dict[str, tuple[int, int, int]]:
    """(size, mtime_ns, mode) of every file under root, symlinks not followed; folders by existence."""
    found: dict[str, tuple[int, int, int]] = {}
    for dirpath, dirs, files in os.walk(root):
        for name in dirs:
            found[str((Path(dirpath) / name).relative_to(root)) + "/"] = (0, 0, 0)
        for name in files:
            path = Path(dirpath) / name
            st = path.lstat()
            found[str(path.relative_to(root))] = (st.st_size, st.st_mtime_ns, st.st_mode)
    return found


def seed_state(job: Job, launcher: Launcher, paths: TrialPaths) -> tuple[str, ...]:
    """Run the state_setup commands (levels, then scenario); returns those that ran.

    Raises:
        StateSetupError: a command failed, or it changed the working tree.
    """
    if not persists(job):
        return ()
    commands = (*job.cell.provisions.state_setup, *job.scenario.state_setup)
    for command in commands:
        before = _tree(paths.workspace)
        done = launcher.shell(
            f'cd "$BENCH_STATE_DIR" && {command}',
            timeout_s=job.limits.timeout_s,
            log=paths.run_dir / SETUP_LOG,
        )
        if done.exit_code != 0:
            raise StateSetupError(f"state_setup command {command!r} failed (exit {done.exit_code})")
        after = _tree(paths.workspace)
        touched = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
        if touched:
            shown = ", ".join(touched[:5]) + (f" (+{len(touched) - 5} more)" if len(touched) > 5 else "")
            raise StateSetupError(
                f"state_setup command {command!r} wrote into the working tree ({shown}); "
                "it may write only to $BENCH_STATE_DIR"
            )
    return commands


def end_session(job: Job, paths: TrialPaths, index: int) -> None:
    """After a non-final session: under a cell without `state_dir`, move the state aside."""
    if persists(job) or not paths.state.is_dir():
        return
    entries = list(paths.state.iterdir())
    if not entries:
        return
    dest = paths.run_dir / step_dir_name(index) / STATE_DIR
    dest.mkdir(parents=True, exist_ok=True)
    for entry in entries:
        shutil.move(str(entry), dest / entry.name)


def failure(step: Step, index: int, total: int, *, error: str | None, exit_code: int | None) -> str | None:
    """Why a session ends the run, naming the step; None when the run goes on.

    A session that failed to run (timeout, limits, infrastructure) always ends it. A non-zero
    exit ends it too when later sessions would build on a session that did not finish; the
    final session's exit is left to grading, as in a single-session run.
    """
    label = f"step {index}/{total} ({step.name})"
    if error:
        return f"{label}: {error}" if total > 1 else error
    if index < total and exit_code not in (0, None):
        return f"{label}: the agent exited {exit_code}"
    if index < total and exit_code is None:
        return f"{label}: the agent never exited on its own"
    return None


class StepStart:
    """The working tree and state directory as a session found them.

    An attempt that ends in an infrastructure failure (exit 75) is retried; in a later step of a
    multi-step run the retry must start where that step began -- earlier sessions' work and the
    state they left included -- not from the cell's starting tree. Only the files that differ
    from the baseline are kept, under `.assay/step-start/`.
    """

    def __init__(self, ws: workspace.Workspace, paths: TrialPaths) -> None:
        self.ws, self.paths = ws, paths
        self.dir = paths.run_dir / META_DIR / "step-start"
        shutil.rmtree(self.dir, ignore_errors=True)
        self.changed = workspace.changes(ws)
        for rel in self.changed:
            source = ws.root / rel
            if source.is_file() or source.is_symlink():
                target = self.dir / "tree" / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target, follow_symlinks=False)
        if paths.state.is_dir():
            shutil.copytree(paths.state, self.dir / STATE_DIR, symlinks=True)

    def restore(self) -> None:
        """Put the tree and the state directory back as the step found them."""
        workspace.reset(self.ws)
        for rel in self.changed:
            saved = self.dir / "tree" / rel
            target = pathsafe.resolve_inside(self.ws.root, rel, allow_final_symlink=True)
            if target.is_symlink() or target.is_file():
                target.unlink()
            if saved.is_file() or saved.is_symlink():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(saved, target, follow_symlinks=False)
        if (self.dir / STATE_DIR).is_dir():
            for entry in list(self.paths.state.iterdir()):
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry)
                else:
                    entry.unlink()
            for entry in (self.dir / STATE_DIR).iterdir():
                dest = self.paths.state / entry.name
                if entry.is_dir() and not entry.is_symlink():
                    shutil.copytree(entry, dest, symlinks=True)
                else:
                    shutil.copy2(entry, dest, follow_symlinks=False)
