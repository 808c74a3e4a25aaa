"""Run, the third stage of a trial: the agent's sessions, each with exit-75 retries and snapshots.

`run_steps` runs a scenario's `steps:` (or its one prompt) as ordered adapter sessions in one
trial; `Session.run` launches the adapter once per attempt (the prompt on stdin, the trial's
limits), watches the entry files while it runs, and turns how it ended into a `StepRecord`
(whose doing the end was: `harness.trial.ending`); an adapter exiting 75 is retried, its outputs
kept under `retries/`. Each launch starts behind a gate, after the harness's launch check
(`harness.trial.agent.probe_phase`). What may cross a session boundary is exactly what the run
measures:

- the working tree carries over, unless a step says `fresh_repo: true` (then it starts again
  from the cell's starting state);
- the state directory (`$BENCH_STATE_DIR`, preserved as `state/`) carries over only when the
  cell's provisions say `state_dir: true`. Under any other cell — the control — it is moved
  to `steps/step-NN/state/` after each session, so the next session starts with it empty:
  nothing persists, and nothing is lost for a human reading the run;
- evidence files exist only during their step (placed by `harness.trial.provision`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from compiler.contract import Job, Step
from harness.artifacts.names import (
    AGENT_LOG,
    CONTEXT_FILE,
    DIFF_FILE,
    META_DIR,
    RETRIES_DIR,
    SNAPSHOTS_DIR,
    STATE_DIR,
    TRANSCRIPT_FILE,
    USAGE_FILE,
    step_dir_name,
)
from harness.artifacts.records import AgentEnd, StepRecord
from harness.sandbox import fdtree, neutralise, proc
from harness.sandbox.gate import Gate
from harness.sandbox.launch import Launcher
from harness.trial import agent, capture, patch, workspace
from harness.trial.ending import INFRA_EXIT, Attempt, ending, in_step, never_started
from harness.trial.environment import TrialPaths
from harness.trial.provision import (
    PROBE_TIMEOUT_S,
    EvidenceBlocked,
    FirstPhase,
    Ready,
    place_evidence,
    remove_evidence,
)
from harness.trial.snapshots import Watcher

if TYPE_CHECKING:
    from harness.gateway import Meter
    from harness.trial.prepare import Trial
    from harness.trial.record import Outcome

AGENT_FILES = (AGENT_LOG, USAGE_FILE, TRANSCRIPT_FILE, CONTEXT_FILE)


class Interrupted(Exception):
    """The trial was cancelled (Ctrl-C, fail-fast)."""


class Either(threading.Event):
    """Set when any of its events is: how the launcher sees both a cancelled batch and a budget stop."""

    def __init__(self, *events: threading.Event | None) -> None:
        super().__init__()
        self._events = tuple(e for e in events if e is not None)

    def is_set(self) -> bool:
        return any(e.is_set() for e in self._events)

    def wait(self, timeout: float | None = None) -> bool:
        """Until one of the events is set (or timeout); polled, since they are separate events."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.is_set():
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            time.sleep(min(0.05, left) if left is not None else 0.05)
        return True


def run_steps(trial: Trial, ready: Ready, out: Outcome, *, cancel: threading.Event | None) -> None:
    """Every session of the trial in order; stops at the first that ends the run: a harness-side
    cause (`error`: the run failed to run), or the agent's own doing (`agent_end`: the run is graded
    as it stands, the later steps never run)."""
    job, ws, paths = trial.job, trial.ws, trial.paths
    usage_log = out.gateway.usage_log if out.gateway else None
    session = out.session = Session(
        job,
        ready.launcher,
        ws,
        paths,
        ready.argv,
        cancel,
        meter=out.meter,
        usage_log=usage_log,
        keyed=bool(out.gateway and out.gateway.hidden_env),
        later=ready.later,
    )
    specs = sessions(job)
    for index, spec in enumerate(specs, start=1):
        if spec.fresh_repo and index > 1:
            workspace.reset(ws)  # the working tree starts over; a treatment's state persists
        start = StepStart(ws, paths) if index > 1 else None
        try:
            placed = place_evidence(spec, trial.project, ws)
        except EvidenceBlocked as exc:
            if index == 1:  # the scenario's own tree: not the agent's doing
                raise
            why = f"what the agent left kept the next session from starting: {exc}"
            out.fields["agent_end"] = in_step(
                AgentEnd(cause="blocked", detail=why), index, len(specs), spec.name
            )
            break  # graded as it stands: the tree the earlier sessions left

        def restore(start: StepStart | None = start, spec: Step = spec, placed: list[Path] = placed) -> None:
            if start is not None:
                start.restore()
            else:
                workspace.reset(ws)
            placed[:] = place_evidence(spec, trial.project, ws)  # the reset removed them

        try:
            first = ready.first if index == 1 else None  # the canaries, before the first session
            step, done = session.run(spec.prompt, spec.name, restore=restore, first=first)
        finally:
            remove_evidence(placed)
        out.steps.append(step)
        out.fields.update(exit_code=done.exit_code, timed_out=done.timed_out)
        budget = tuple(out.meter.hit) if out.meter else ()
        out.fields["limits_hit"] = (
            tuple(n for n, hit in (("timeout", done.timed_out), ("output", done.output_capped)) if hit)
            + done.limits_hit
            + budget
        )
        if out.meter is not None and out.meter.problem:  # the harness could not count: not the agent's doing
            out.fields["error"] = f"the trial's budget could not be kept: {out.meter.problem}"
            break
        if step.error:  # a harness-side cause: the run failed to run
            out.fields["error"] = (
                f"step {index}/{len(specs)} ({spec.name}): {step.error}" if len(specs) > 1 else step.error
            )
            break
        if step.agent_end is not None:  # the agent's doing: graded on what it left, as it stands
            out.fields["agent_end"] = in_step(step.agent_end, index, len(specs), spec.name)
            break  # the failed session's artifacts stay the run's own; later steps are not recorded
        if budget:  # spent: later sessions would be refused; the work left is graded
            break
        if index < len(specs):
            stash_attempt(paths.run_dir, step_dir_name(index))
            (paths.run_dir / step_dir_name(index) / DIFF_FILE).write_bytes(patch.diff(ws).data)
            end_session(job, paths, index)


def sessions(job: Job) -> list[Step]:
    """The ordered sessions of a trial: the scenario's steps, or one step of its prompt."""
    return list(job.scenario.steps) or [Step(name="main", prompt=job.scenario.prompt)]


def end_session(job: Job, paths: TrialPaths, index: int) -> None:
    """After a non-final session: under a cell without `state_dir`, move the state aside."""
    if job.cell.provisions.state_dir or not paths.state.is_dir():
        return
    entries = list(paths.state.iterdir())
    if not entries:
        return
    dest = paths.run_dir / step_dir_name(index) / STATE_DIR
    dest.mkdir(parents=True, exist_ok=True)
    for entry in entries:
        shutil.move(str(entry), dest / entry.name)


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
        neutralise.remove_tree(self.dir, ignore_errors=True)
        (self.dir / "tree").mkdir(parents=True)
        self.changed = workspace.changes(ws)
        with _folders(ws.root, self.dir / "tree") as (src, dst):
            for rel in self.changed:
                # An odd file or a path too long to name cannot be kept: a retry starts without it.
                with contextlib.suppress(OSError):
                    fdtree.put(src, os.fsencode(rel), dst, os.fsencode(rel), link=False)
        if paths.state.is_dir():
            fdtree.copy_tree(paths.state, self.dir / STATE_DIR)

    def restore(self) -> None:
        """Put the tree and the state directory back as the step found them."""
        workspace.reset(self.ws)
        with _folders(self.dir / "tree", self.ws.root) as (saved, tree):
            for rel in map(os.fsencode, self.changed):
                with contextlib.suppress(OSError):
                    neutralise.remove_tree(rel, dir_fd=tree)
                with contextlib.suppress(OSError):
                    fdtree.put(saved, rel, tree, rel, link=False)
        if (self.dir / STATE_DIR).is_dir():
            for entry in list(self.paths.state.iterdir()):
                neutralise.remove_tree(entry)
            fdtree.copy_tree(self.dir / STATE_DIR, self.paths.state)


@contextlib.contextmanager
def _folders(src: Path, dst: Path) -> Iterator[tuple[int, int]]:
    """Descriptors of two folders, for *at() calls with paths relative to them."""
    a = os.open(src, os.O_RDONLY | os.O_DIRECTORY)
    try:
        b = os.open(dst, os.O_RDONLY | os.O_DIRECTORY)
        try:
            yield a, b
        finally:
            os.close(b)
    finally:
        os.close(a)


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
        *,
        meter: Meter | None = None,
        usage_log: Path | None = None,
        keyed: bool = False,
        later: str = "",
    ) -> None:
        self.job, self.launcher, self.ws, self.paths, self.argv, self.cancel = (
            job,
            launcher,
            ws,
            paths,
            argv,
            cancel,
        )
        self.meter = meter
        """The trial's budgets: the gateway sets `meter.stop` to end a session that keeps asking."""
        self.usage_log = usage_log
        """The gateway's log when it carries the model: the account of record for usage, and the
        harness's own evidence of a provider failure."""
        self.keyed = keyed
        """The gateway injects the API key: the provider refusing it is the harness's failure."""
        self.later = later
        """The phase before the gate of every launch after the first (`provision.Ready.later`)."""
        self.modes = folder_modes(launcher)
        """The writable folders' permission bits before the agent ran (`reopen`)."""
        self.retries = 0

    def run(
        self,
        prompt: str,
        name: str,
        *,
        restore: Callable[[], None] | None = None,
        first: FirstPhase | None = None,
    ) -> tuple[StepRecord, proc.ProcResult]:
        """One session; a retried attempt starts from `restore()` (default: the baseline). `first`:
        the canaries, run in the first attempt's launch before the adapter."""
        watch = self.job.scenario.watch or self.job.scenario.entry
        started = time.time()
        for attempt in range(self.job.options.infra_retries + 1):
            tried = time.time()
            with Watcher(self.ws.root, watch, self.paths.run_dir / SNAPSHOTS_DIR):
                done = self._launch(prompt.encode("utf-8"), first if attempt == 0 else None)
            spent = self.meter is not None and bool(self.meter.hit or self.meter.problem)
            if done.cancelled and not (spent and not (self.cancel and self.cancel.is_set())):
                raise Interrupted()
            if done.exit_code != INFRA_EXIT or attempt == self.job.options.infra_retries or spent:
                break  # a refused budget is not a provider failure: a retry would be refused too
            self.retries += 1
            stash_attempt(self.paths.run_dir, f"{RETRIES_DIR}/{name}-attempt-{attempt + 1:02d}")
            if restore is not None:  # a later step of a multi-step run: from where that step began
                restore()
            else:
                workspace.reset(self.ws)
        now = time.time()
        end = ending(
            self.job,
            done,
            enforced=self.launcher.enforced,
            retries=self.retries,
            spent=spent,
            gateway=Attempt(self.usage_log, tried, now, self.keyed) if self.usage_log is not None else None,
        )
        window = (self.usage_log, started, now) if self.usage_log is not None else None
        metrics = capture.metrics(self.paths, duration_s=done.duration_s, gateway=window)
        step = StepRecord(
            name=name,
            started_at=started,
            ended_at=time.time(),
            exit_code=done.exit_code,
            error=end.error,
            agent_end=end.agent_end,
            metrics=metrics,
        )
        return step, done

    def _launch(self, prompt: bytes, first: FirstPhase | None, *, alone: bool = False) -> proc.ProcResult:
        """One attempt's launch of the adapter, behind a gate: with `first`, the canaries and the launch
        check run first in it; a later launch runs the launch check (`later`). `alone`: without a
        gate (the launch check has just passed in a launch of its own)."""
        gate: Gate | None = None
        phase = ""
        if first is not None:
            gate, phase = first.gate, first.script
        elif not alone and self.later:
            gate, phase = Gate(PROBE_TIMEOUT_S), self.later
            reopen(self.modes)
        done = self.launcher.run(
            gate.wrap(phase, self.argv) if gate is not None else self.argv,
            stdin=prompt,
            timeout_s=self.job.limits.timeout_s,
            log=self.paths.agent_log,
            output_cap=self.job.limits.output_bytes,
            cancel=Either(self.cancel, self.meter.stop if self.meter else None),
            gate=gate,
        )
        if first is None:
            if gate is not None and gate.at is None and not done.cancelled:
                raise agent.AdapterCannotStart(never_started(gate, done))
            return done
        if done.cancelled and first.gate.at is None:
            return done  # stopped before the canaries ended: an interruption, never their verdict
        first.finish("timed out" if done.timed_out else f"launch exit {done.exit_code}")
        if first.gate.failed is not None:
            raise first.gate.failed
        if first.gate.at is not None or done.cancelled:
            return done
        # The canaries never ended, so the adapter never started: it gets a launch of its own.
        first.alone()
        return self._launch(prompt, None, alone=True)


def folder_modes(launcher: Launcher) -> dict[Path, int]:
    """The permission bits of the agent's writable folders as the harness made them."""
    modes = {}
    for mount in launcher.mounts:
        with contextlib.suppress(OSError):
            st = os.lstat(mount.src)
            if mount.writable and stat.S_ISDIR(st.st_mode):
                modes[mount.src] = stat.S_IMODE(st.st_mode)
    return modes


def reopen(modes: dict[Path, int]) -> None:
    """Give the agent's writable folders the permission bits the harness made them with, before a
    later launch: an agent that locked its own workspace (`chmod 000 .`) would keep the sandbox from
    entering it, and a launch that never reaches its gate is the harness's failure — never a way
    out of the rates. What is inside the folders stays as the agent left it."""
    for folder, mode in modes.items():
        with contextlib.suppress(OSError):
            st = os.lstat(folder)
            if stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) != mode:
                os.chmod(folder, mode)
