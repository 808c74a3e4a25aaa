"""Running a batch of jobs: resume, shuffled order, an executor, a progress line.

Shared by `assay run` and `assay matrix`. A trial is finished when its run.json is for the same
job hash, uninterrupted, AND it has a usable grade: a finished run without one is graded, and one
that ended in an infrastructure failure is run again (the retry policy); everything else is run. The order is shuffled with the matrix seed so
trials of one cell do not all share the same minutes of machine load.
"""

from __future__ import annotations

import random
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from compiler.contract import Job
from harness.artifacts.records import RunStatus, read_grade, read_run
from harness.artifacts.run_tree import is_finished, read_job, run_dir_for
from harness.batch.executor import TrialOutcome, TrialTask
from harness.batch.executor import select as select_executor  # `select` here is the sibling module
from harness.batch.executor.task import IO_ERROR, grader_available

RETRYABLE = ("error", "failed_to_run", "invalid")
"""Outcomes on the harness's side that a resume runs again by default (`--retry` chooses)."""


@dataclass(frozen=True)
class Plan:
    """What a batch will do."""

    tasks: tuple[TrialTask, ...]
    skipped: tuple[str, ...]
    retried: tuple[str, ...] = ()
    """Finished runs run again under the retry policy (infrastructure failures)."""
    regraded: tuple[str, ...] = ()
    """Finished runs that lacked a usable grade: graded, not run again."""


def finished_state(run_dir: Path, job: Job, project: Path) -> str | None:
    """How a finished run of this job ended, for the resume policy; None when it must run again.

    `graded` (a usable grade), `ungraded` (no usable grade: grade it), or a retryable outcome:
    `error` (the harness failed), `invalid` (a canary or isolation broke), `failed_to_run`.
    A damaged job.json of a finished run is restored from generated/ when it still compiles the
    same job; otherwise the run is run again.
    """
    if not is_finished(run_dir, job):
        return None
    try:
        record = read_run(run_dir)
        read_job(run_dir, generated=project / "generated")
    except (OSError, ValueError):
        return None
    if record.error:
        return "error"
    if record.invalid:
        return "invalid"
    grade = read_grade(run_dir) if grader_available() else None
    if grader_available() and (grade is None or grade.status is RunStatus.UNGRADEABLE):
        return "ungraded"
    if grade is not None and grade.status is RunStatus.FAILED_TO_RUN:
        return "failed_to_run"
    return "graded"


def plan(
    jobs: Iterable[Job],
    *,
    project: Path,
    runs_root: Path,
    seed: int,
    force: bool = False,
    concurrent: bool = False,
    retry: Collection[str] = RETRYABLE,
) -> Plan:
    """Order the jobs by the seed and drop the finished ones (unless forced).

    A finished run without a usable grade is graded (not run again); one that ended in an
    outcome named by `retry` is run again.
    """
    ordered = sorted(jobs, key=lambda j: j.id)
    random.Random(seed).shuffle(ordered)
    tasks: list[TrialTask] = []
    skipped: list[str] = []
    retried: list[str] = []
    regraded: list[str] = []
    for job in ordered:
        run_dir = run_dir_for(job, runs_root)
        state = None if force else finished_state(run_dir, job, project)
        if state == "graded" or (state in RETRYABLE and state not in retry):
            skipped.append(job.id)
            continue
        if state in retry:
            retried.append(job.id)
        if state == "ungraded":
            regraded.append(job.id)
        tasks.append(
            TrialTask(
                job_json=job.model_dump_json(),
                project=str(project),
                run_dir=str(run_dir),
                concurrent=concurrent,
                grade_only=state == "ungraded",
            )
        )
    return Plan(tasks=tuple(tasks), skipped=tuple(skipped), retried=tuple(retried), regraded=tuple(regraded))


@dataclass
class Progress:
    """The progress line on stderr: done/total, pass/fail/other counts, ETA."""

    total: int
    stream: TextIO | None = field(default_factory=lambda: sys.stderr)
    started: float = field(default_factory=time.monotonic)
    counts: Counter[str] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def line(self) -> str:
        done = sum(self.counts.values())
        elapsed = time.monotonic() - self.started
        eta = (
            "" if not done or done == self.total else f" | ETA {_clock(elapsed / done * (self.total - done))}"
        )
        parts = [f"pass {self.counts['passed']}", f"fail {self.counts['failed']}"]
        parts += [f"{k} {v}" for k, v in sorted(self.counts.items()) if k not in ("passed", "failed") and v]
        return f"assay: [{done}/{self.total}] " + ", ".join(parts) + f" | {_clock(elapsed)}{eta}"

    def __call__(self, outcome: TrialOutcome) -> None:
        with self.lock:
            self.counts[outcome.status] += 1
            if outcome.status in ("error", IO_ERROR) and outcome.detail:
                # why, once per trial: a run that failed before its run.json has no other record of it
                why = outcome.detail.strip().splitlines()[-1][:300]
                say(self.stream, f"assay: {outcome.job_id}: {outcome.status}: {why}")
            say(self.stream, self.line(), final=sum(self.counts.values()) == self.total)


def say(stream: TextIO | None, text: str, *, final: bool = True) -> None:
    """One progress or summary line; a closed or broken stream (`| head`, stderr closed: then
    Python's sys.stderr is None) is ignored, since losing the progress line must never stop the trials."""
    if stream is None:
        return
    try:
        tty = stream.isatty()
        stream.write(("\r\x1b[2K" if tty else "") + text + ("\n" if final or not tty else ""))
        stream.flush()
    except (OSError, ValueError):
        pass


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


def execute(
    tasks: Sequence[TrialTask],
    *,
    parallel: int,
    executor: str = "local",
    stream: TextIO | None = None,
    fail_fast: bool = False,
    options: Mapping[str, Any] | None = None,
    on_finished: Callable[[TrialOutcome], None] | None = None,
) -> list[TrialOutcome]:
    """Run the tasks with the named executor, printing progress; re-raises KeyboardInterrupt.

    `on_finished` makes a finished run's derived files (its page) where the run directory is,
    before the progress line counts it (see `Executor.run`).

    With fail_fast the first failed or errored trial stops the batch: running trials are
    recorded as interrupted, trials not started are skipped (both rerun on resume).
    """
    progress = Progress(total=len(tasks), stream=stream if stream is not None else sys.stderr)
    cancel = threading.Event()

    def on_outcome(outcome: TrialOutcome) -> None:
        progress(outcome)
        if (fail_fast and outcome.status in ("failed", "error")) or outcome.status == IO_ERROR:
            cancel.set()  # a full or read-only disk fails every later trial too: stop, resume later

    # Runs that finished but lack a grade are graded here, whatever runs the trials: their
    # run directories are already in this tree.
    regrade = [t for t in tasks if t.grade_only]
    run = [t for t in tasks if not t.grade_only]
    outcomes = (
        select_executor("local").run(
            regrade, parallel=parallel or 1, on_outcome=on_outcome, cancel=cancel, on_finished=on_finished
        )
        if regrade
        else []
    )
    if run and not cancel.is_set():
        outcomes += select_executor(executor, **(options or {})).run(
            run, parallel=parallel, on_outcome=on_outcome, cancel=cancel, on_finished=on_finished
        )
    return outcomes


NOT_RUN = ("skipped", "interrupted", IO_ERROR)
"""Outcomes of trials that did not run to their end: dropped before they began, stopped, or
unable to write their run directory."""


def ran(outcomes: Sequence[TrialOutcome]) -> int:
    """How many trials ran to their end, whatever their verdict: what a stopped batch did."""
    return sum(1 for o in outcomes if o.status not in NOT_RUN)


def summary(outcomes: Sequence[TrialOutcome]) -> dict[str, int]:
    """Counts by status."""
    return dict(sorted(Counter(o.status for o in outcomes).items()))
