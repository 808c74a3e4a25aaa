"""The run stage of a trial: the adapter's sessions, with exit-75 retries, snapshots and evidence.

`Session.run` launches the adapter once per attempt (the prompt on stdin, the trial's limits),
watches the entry files while it runs, and turns how it ended into a `StepRecord`; an adapter
exiting 75 is retried from a reset workspace, its outputs kept under `retries/`.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path

from compiler.contract import Job, Step
from harness.artifacts.names import (
    AGENT_LOG,
    CONTEXT_FILE,
    RETRIES_DIR,
    SNAPSHOTS_DIR,
    TRANSCRIPT_FILE,
    USAGE_FILE,
)
from harness.artifacts.records import StepRecord
from harness.sandbox import pathsafe, proc
from harness.sandbox.launch import Launcher
from harness.trial import capture, provision, workspace
from harness.trial.environment import TrialPaths
from harness.trial.snapshots import Watcher

INFRA_EXIT = 75
AGENT_FILES = (AGENT_LOG, USAGE_FILE, TRANSCRIPT_FILE, CONTEXT_FILE)


class Interrupted(Exception):
    """The trial was cancelled (Ctrl-C, fail-fast)."""


def place_evidence(step: Step, project: Path, ws: workspace.Workspace) -> list[Path]:
    """Materialise a step's evidence files (present only during that step, never graded)."""
    placed: list[Path] = []
    for dest, src in sorted(step.evidence.items()):
        try:  # the agent of an earlier step may have planted links to redirect this write
            target = pathsafe.resolve_inside(ws.root, dest)
            if target.exists() or target.is_symlink():
                raise provision.ProvisionError(
                    f"evidence {dest!r} of step {step.name!r} collides with a workspace file"
                )
            pathsafe.write_inside(ws.root, dest, (project / src).read_bytes())
        except pathsafe.PathEscape as exc:
            raise provision.ProvisionError(f"evidence {dest!r} of step {step.name!r}: {exc}") from exc
        placed.append(target)
    return placed


def remove_evidence(placed: list[Path]) -> None:
    for path in placed:
        path.unlink(missing_ok=True)


def stash_attempt(run_dir: Path, label: str) -> None:
    """Move an attempt's adapter outputs aside so the next attempt starts clean."""
    dest = run_dir / label
    dest.mkdir(parents=True, exist_ok=True)
    for name in AGENT_FILES:
        if (run_dir / name).exists():
            shutil.move(str(run_dir / name), dest / name)


class Session:
    """Runs the adapter for one session, with exit-75 retries."""

    def __init__(
        self,
        job: Job,
        launcher: Launcher,
        ws: workspace.Workspace,
        paths: TrialPaths,
        argv: list[str],
        cancel: threading.Event | None,
    ) -> None:
        self.job, self.launcher, self.ws, self.paths, self.argv, self.cancel = (
            job,
            launcher,
            ws,
            paths,
            argv,
            cancel,
        )
        self.retries = 0

    def run(
        self, prompt: str, name: str, *, restore: Callable[[], None] | None = None
    ) -> tuple[StepRecord, proc.ProcResult]:
        """One session; a retried attempt starts from `restore()` (default: the baseline)."""
        watch = self.job.scenario.watch or self.job.scenario.entry
        started = time.time()
        for attempt in range(self.job.options.infra_retries + 1):
            with Watcher(self.ws.root, watch, self.paths.run_dir / SNAPSHOTS_DIR):
                done = self.launcher.run(
                    self.argv,
                    stdin=prompt.encode("utf-8"),
                    timeout_s=self.job.limits.timeout_s,
                    log=self.paths.agent_log,
                    output_cap=self.job.limits.output_bytes,
                    cancel=self.cancel,
                )
            if done.cancelled:
                raise Interrupted()
            if done.exit_code != INFRA_EXIT or attempt == self.job.options.infra_retries:
                break
            self.retries += 1
            stash_attempt(self.paths.run_dir, f"{RETRIES_DIR}/{name}-attempt-{attempt + 1:02d}")
            if restore is not None:  # a later step of a multi-step run: from where that step began
                restore()
            else:
                workspace.reset(self.ws)
        error = None
        if done.timed_out:
            error = f"agent timed out after {self.job.limits.timeout_s:g} s"
        elif done.output_capped:
            error = f"agent output passed the cap of {self.job.limits.output_bytes} bytes"
        elif done.exit_code == INFRA_EXIT:
            error = f"infrastructure failure: adapter exited {INFRA_EXIT} after {self.retries} retries"
        elif done.limits_hit:  # like a timeout: stopped by the harness, so never graded as a pass
            error = f"agent hit its {', '.join(done.limits_hit)} limit"
        metrics = capture.metrics(self.paths, duration_s=done.duration_s)
        step = StepRecord(
            name=name,
            started_at=started,
            ended_at=time.time(),
            exit_code=done.exit_code,
            error=error,
            metrics=metrics,
        )
        return step, done
