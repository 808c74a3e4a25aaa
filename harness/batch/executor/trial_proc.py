"""One trial as its own process on a worker: `python -m harness.batch.executor.trial_proc IN OUT`.

IN is a JSON `TrialTask` (project and run_dir are the worker's), OUT receives the
`TrialOutcome` as JSON. A Dask worker runs every trial this way rather than in one of its
threads so that ending a trial is ending a process tree. A line on stdin, stdin closing
(the worker died) or SIGTERM/SIGINT set the runner's cancel event — the agent is killed and
the run is recorded as interrupted. Stdin is the worker's channel because a byte written there
waits until this process reads it, while a signal sent during interpreter start-up kills it
without a record. Whatever is left below this process when it exits is killed, since this process is a child
subreaper and orphans of its tree are re-parented to it.

Before running, the job's `agent.requires` are checked against this machine; a lack makes
the trial `failed_to_run` with the reason, as data, like any other failure to run.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import signal
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from types import FrameType

from compiler.contract import Job
from harness.artifacts.names import RUN_FILE
from harness.artifacts.records import RunRecord
from harness.artifacts.run_tree import identity, start_run
from harness.artifacts.store import write_atomic, write_record
from harness.batch.executor import requirements
from harness.batch.executor.proctree import become_subreaper, kill_descendants
from harness.batch.executor.task import TrialOutcome, TrialTask, execute, grade, grader_available


def write_failed_run(
    job: Job, run_dir: Path, error: str, *, project: Path, concurrent: bool = False
) -> TrialOutcome:
    """Record a trial that could not run here (run.json with `error`, then its grade)."""
    started = time.time()
    start_run(run_dir, job)
    record = RunRecord(
        **identity(job),
        agent_version=job.agent.version,
        started_at=started,
        ended_at=time.time(),
        environment={"os": platform.platform(), "python": platform.python_version(), "host": platform.node()},
        concurrent=concurrent,
        error=error,
    )
    write_record(run_dir / RUN_FILE, record)
    if grader_available():
        try:
            grade(run_dir, project)
        except Exception as exc:  # the per-trial boundary: the failure is already recorded as data
            error = f"{error}; grader crashed: {exc}"
    return TrialOutcome(job_id=job.id, run_dir=str(run_dir), status="error", seconds=0.0, detail=error)


def unmet(job: Job) -> str | None:
    """Why this machine cannot run the job's agent, or None."""
    try:
        parsed = requirements.parse(job.agent.requires)
    except requirements.RequirementError as exc:
        return f"agent {job.agent.id!r}: {exc}"
    problems = requirements.missing(parsed)
    if not problems:
        return None
    return f"worker {platform.node()} lacks what agent {job.agent.id!r} requires: " + "; ".join(problems)


def run(task: TrialTask, cancel: threading.Event) -> TrialOutcome:
    """Check the job's requirements, then run and grade it."""
    job = task.job
    reason = unmet(job)
    if reason is not None:
        return write_failed_run(
            job, Path(task.run_dir), reason, project=Path(task.project), concurrent=task.concurrent
        )
    return execute(task, cancel)


def _watch_stdin(cancel: threading.Event) -> None:
    """Set cancel on the first byte or the end of stdin, which no child of this process inherits."""
    channel = os.dup(0)  # not inheritable, unlike fd 0
    quiet = os.open(os.devnull, os.O_RDONLY)
    os.dup2(quiet, 0)
    os.close(quiet)

    def _read() -> None:
        with contextlib.suppress(OSError):
            os.read(channel, 1)
        cancel.set()

    threading.Thread(target=_read, daemon=True, name="cancel-on-stdin").start()


def main(argv: Sequence[str]) -> int:
    """Entry point; returns the process exit status."""
    if len(argv) != 2:
        print("usage: python -m harness.batch.executor.trial_proc TASK_JSON OUTCOME_JSON", file=sys.stderr)
        return 2
    become_subreaper()
    cancel = threading.Event()

    def _stop(signum: int, frame: FrameType | None) -> None:
        cancel.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    _watch_stdin(cancel)
    try:
        task = TrialTask(**json.loads(Path(argv[0]).read_text(encoding="utf-8")))
        outcome = run(task, cancel)
        write_atomic(Path(argv[1]), json.dumps(asdict(outcome), sort_keys=True) + "\n")
    finally:
        kill_descendants()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
