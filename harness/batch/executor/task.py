"""The per-trial unit every executor runs: run the job, then grade it if a grader exists.

`execute(task)` is pure in what it shares — a job in, a run directory out — so the local
pool and a Dask worker call the very same function. The job travels as JSON (`TrialTask`
holds plain data), which is what a remote worker receives.
"""

from __future__ import annotations

import importlib.util
import threading
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from compiler.contract import Job
from harness.artifacts.records import RunRecord, read_run
from harness.errors import IO_ERRNOS, io_detail
from harness.sandbox import proc
from harness.sandbox.isolation import select
from harness.trial import faults, run_trial


@dataclass(frozen=True)
class TrialTask:
    """One trial to run: the job (as JSON) and where its run directory goes."""

    job_json: str
    project: str
    run_dir: str
    concurrent: bool = False
    grade_only: bool = False
    """The run finished but has no usable grade (a kill between run.json and grade.json): grade it."""

    @property
    def job(self) -> Job:
        return Job.model_validate_json(self.job_json)


@dataclass(frozen=True)
class TrialOutcome:
    """What became of one trial, for progress and the exit code."""

    job_id: str
    run_dir: str
    status: str
    """passed | failed | ungraded | invalid | error | interrupted | skipped | io-error"""
    seconds: float
    detail: str = ""


def grader_available() -> bool:
    """Whether the grader (harness.grade) is installed in this build."""
    return importlib.util.find_spec("harness.grade") is not None


class Graders(Protocol):
    """What a pool's worker threads grade in: a grading session each (`harness.grade.Graders`)."""

    def mine(self) -> Any: ...

    def close(self) -> None: ...


def graders() -> Graders | None:
    """A session per grading thread of a pool (its scratch folder and warm check servers kept from
    one trial's grade to the next: a sandbox and a pytest import per thread, not per trial); None
    when this build has no grader. The pool closes it when its trials are done."""
    if not grader_available():
        return None
    from harness.grade import Graders as Sessions

    return Sessions()


def grade(run_dir: Path, project: Path, grading: Any = None) -> tuple[str, str]:
    """Grade a run with harness.grade.grade_run (in `grading`, a session, when given); (status, detail)."""
    from harness.grade import grade_run

    result = grade_run(run_dir, project=project, grading=grading)
    status = getattr(result, "status", None)
    status_value = getattr(status, "value", status)
    if status_value and status_value != "graded":
        return "error", str(getattr(result, "error", "") or status_value)
    return ("passed" if getattr(result, "passed", False) else "failed"), ""


def classify(record: RunRecord) -> tuple[str, str]:
    """Status of a run before grading."""
    if record.interrupted:
        return "interrupted", ""
    if record.invalid:
        return "invalid", record.invalid
    if record.error:
        return "error", record.error
    return "ungraded", ""


_PROBE_LOCK = threading.Lock()


def warm(isolation: str) -> None:
    """Resolve an isolation once, serially: its first probe is slow, and many trials starting
    at once would otherwise all probe at the same time (measured: 20 parallel first probes took
    25 s each where one takes 1 s)."""
    with _PROBE_LOCK:
        select(isolation)
        proc.warm()


IO_ERROR = "io-error"
"""A trial that could not be prepared or recorded because the run tree cannot be written."""


def execute(
    task: TrialTask, cancel: threading.Event | None = None, sessions: Graders | None = None
) -> TrialOutcome:
    """Run one trial and grade it (in this thread's session of `sessions`, when given); never raises
    for a trial that went wrong.

    An OSError of the run tree itself (full disk, read-only, I/O error) is `io-error`: the batch
    stops, and since run.json is written last and atomically nothing half-written looks finished.
    """
    start = time.monotonic()
    job = task.job
    run_dir = Path(task.run_dir)

    def outcome(status: str, detail: str = "") -> TrialOutcome:
        return TrialOutcome(job.id, str(run_dir), status, time.monotonic() - start, detail)

    if cancel is not None and cancel.is_set():  # the batch was stopped before this trial began
        return outcome("skipped")
    try:
        if task.grade_only:
            record = read_run(run_dir)
        else:
            warm(job.options.isolation)
            record = run_trial(
                job, project=Path(task.project), run_dir=run_dir, cancel=cancel, concurrent=task.concurrent
            )
        status, detail = classify(record)
        if status in ("ungraded", "error", "invalid") and not record.interrupted and grader_available():
            faults.stop_point("grading", run_dir, cancel)
            graded, graded_detail = grade(
                run_dir, Path(task.project), sessions.mine() if sessions is not None else None
            )
            if status == "ungraded":
                status, detail = graded, graded_detail
    except OSError as exc:
        if exc.errno not in IO_ERRNOS:
            return outcome("error", "".join(traceback.format_exception_only(exc)).strip())
        return outcome(IO_ERROR, io_detail(exc, run_dir))
    except Exception:  # the per-trial boundary: a grader crash is this trial's problem, not the matrix's
        return outcome("error", "grader crashed: " + traceback.format_exc(limit=3))
    return outcome(status, detail)
