"""The task a Dask worker runs for one trial: unpack the project, run the trial, ship it back.

`run_remote` receives the job, the content addresses of the project trees it needs and the
trees' bytes (Dask moves each tree to a worker once and keeps it there; the worker also
caches it on disk by digest), assembles a project folder, runs the trial with the local
runner and grader (`harness.batch.executor.task.execute`, after the job's `agent.requires` are
checked) and returns its run directory as one archive.

A trial runs in the worker's thread, like in the local pool: the runner ends the agent's
whole process tree itself (pid namespace, parent-death signal). With ASSAY_DASK_TRIAL_PROCESS=1
on a worker each trial is a child process instead (`harness.batch.executor.trial_proc`), which can be
killed outright — at an interpreter start per trial.

Cancellation never relies on `future.cancel()`, which does not stop a running task: every
run has a distributed `Event`; one thread per worker and run long-polls it, and when it is
set every trial of that run on this worker gets its cancel event set (the runner kills the
agent's tree and records the run as interrupted; a trial process is told on its stdin, then
SIGKILLed with its tree after a grace period). A trial past its hard deadline is ended the
same way and recorded as `failed_to_run`.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import harness
from compiler.contract import Job
from harness.artifacts.names import RUN_FILE
from harness.batch.executor.proctree import kill_tree
from harness.batch.executor.task import TrialOutcome, TrialTask
from harness.batch.transport import Bundle, materialise, pack_run, remove_tree
from harness.sandbox import disk
from harness.sandbox.isolation import cgroups

GRACE_S = 10.0
"""How long an interrupted trial may take to record itself before its tree is killed."""
POLL_S = 2.0
"""Long-poll period of the cancel event (one request per worker and run, not per trial)."""
_IDLE_S = 60.0

NOT_STARTED = "cancelled before start"
PROCESS_ENV = "ASSAY_DASK_TRIAL_PROCESS"
"""Set to 1 on a worker to run each trial as its own process (killable outright at the hard
deadline, a crash cannot take the worker down) at the cost of an interpreter start per trial."""
CACHE_ENV = "ASSAY_DASK_CACHE"
"""Overrides where a worker keeps shipped trees and project folders (default: its local directory)."""


@dataclass(frozen=True)
class RemoteResult:
    """What a worker sends back for one trial."""

    outcome: TrialOutcome
    archive: bytes | None
    """The run directory as one tar; None when nothing worth installing was left."""
    worker: str
    started: float
    ended: float
    trial_s: float
    """Seconds the trial process ran (the rest of ended - started is the executor's overhead)."""


class _Watch:
    """Long-polls one run's cancel event for every trial of that run on this worker."""

    def __init__(self, name: str, client: Any) -> None:
        from distributed import Event

        self.name = name
        self.event = Event(name, client=client)
        self.fired = threading.Event()
        self.trials: set[threading.Event] = set()
        """Cancel events of the trials of this run running in this worker's threads."""
        self.users = 0
        self.idle_since = time.monotonic()
        threading.Thread(target=self._loop, daemon=True, name=f"assay-watch-{name[-8:]}").start()

    def _loop(self) -> None:
        while not self.fired.is_set():
            with _LOCK:
                if self.users == 0 and time.monotonic() - self.idle_since > _IDLE_S:
                    _WATCHES.pop(self.name, None)
                    return
            try:
                if self.event.wait(timeout=POLL_S):
                    with _LOCK:
                        self.fired.set()
                        for cancel in self.trials:
                            cancel.set()
            except Exception:  # scheduler briefly unreachable: keep polling, the task has a deadline
                time.sleep(POLL_S)


_WATCHES: dict[str, _Watch] = {}
_LOCK = threading.Lock()


def _watch(name: str) -> _Watch:
    from distributed import get_client

    with _LOCK:
        watch = _WATCHES.get(name)
        if watch is None:
            watch = _WATCHES[name] = _Watch(name, get_client())
        watch.users += 1
        return watch


def _register(watch: _Watch, cancel: threading.Event, *, add: bool) -> None:
    with _LOCK:
        if add:
            watch.trials.add(cancel)
            if watch.fired.is_set():
                cancel.set()
        else:
            watch.trials.discard(cancel)


def _release(watch: _Watch) -> None:
    with _LOCK:
        watch.users -= 1
        watch.idle_since = time.monotonic()


def _code_root() -> str:
    return str(Path(harness.__file__).resolve().parent.parent)


@functools.cache
def code_digest() -> str:
    """Content digest of the assay code this process runs (compiler, harness and adapters sources)."""
    root = Path(_code_root())
    digest = hashlib.sha256()
    for package in ("compiler", "harness", "adapters"):
        for path in sorted((root / package).rglob("*.py")):
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _base_dir() -> Path:
    override = os.environ.get(CACHE_ENV)
    if override:
        return Path(override)
    from distributed import get_worker

    return Path(get_worker().local_directory) / "assay"


def _spawn(task_file: Path, outcome_file: Path, log: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_code_root(), env.get("PYTHONPATH", "")) if p)
    setpriv = shutil.which("setpriv")
    # The trial dies with the thread that started it, so a dying worker takes its trials along.
    prefix = [setpriv, "--pdeathsig", "KILL"] if setpriv else []
    with log.open("wb") as sink:
        return subprocess.Popen(
            [
                *prefix,
                sys.executable,
                "-m",
                "harness.batch.executor.trial_proc",
                str(task_file),
                str(outcome_file),
            ],
            stdin=subprocess.PIPE,
            stdout=sink,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )


def _cancel(proc: subprocess.Popen[bytes]) -> None:
    """Ask the trial process to stop: a byte on its stdin, read even before it could take a signal."""
    assert proc.stdin is not None
    try:
        proc.stdin.write(b"cancel\n")
        proc.stdin.close()
    except OSError:
        pass  # already gone


def _supervise(proc: subprocess.Popen[bytes], watch: _Watch, deadline: float) -> str | None:
    """Wait for the trial process; None when it ended by itself, else why it was ended."""
    why: str | None = None
    terminated_at: float | None = None
    while True:
        try:
            proc.wait(timeout=0.2)
            return why
        except subprocess.TimeoutExpired:
            pass
        now = time.monotonic()
        if why is None and watch.fired.is_set():
            why = "cancelled"
        elif why is None and now >= deadline:
            why = "deadline"
        if why is not None and terminated_at is None:
            terminated_at = now
            _cancel(proc)
        if terminated_at is not None and (now - terminated_at > GRACE_S or why == "deadline"):
            kill_tree(proc.pid)
            proc.wait()
            return why


def _tail(path: Path, limit: int = 2000) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")[-limit:]
    except OSError:
        return ""


def _deadline_failure(task: TrialTask, job: Job, deadline_s: float, worker: str) -> TrialOutcome:
    from harness.batch.executor.trial_proc import write_failed_run

    reason = f"trial passed the executor's hard deadline of {deadline_s:g} s on worker {worker}"
    return write_failed_run(
        job, Path(task.run_dir), reason, project=Path(task.project), concurrent=task.concurrent
    )


def _in_thread(task: TrialTask, job: Job, watch: _Watch, deadline_s: float, worker: str) -> TrialOutcome:
    """Run the trial in this worker thread; the run's event or the deadline set its cancel event."""
    from harness.batch.executor import trial_proc

    cancel = threading.Event()
    expired = threading.Event()

    def _expire() -> None:
        expired.set()
        cancel.set()

    timer = threading.Timer(deadline_s, _expire)
    timer.daemon = True
    _register(watch, cancel, add=True)
    timer.start()
    try:
        outcome = trial_proc.run(task, cancel)
    finally:
        timer.cancel()
        _register(watch, cancel, add=False)
    if expired.is_set():
        return _deadline_failure(task, job, deadline_s, worker)
    return outcome


def _in_process(
    task: TrialTask, job: Job, scratch: Path, watch: _Watch, deadline_s: float, worker: str
) -> TrialOutcome:
    """Run the trial as a child process (ASSAY_DASK_TRIAL_PROCESS=1): a hung trial is killed outright."""
    (scratch / "task.json").write_text(json.dumps(asdict(task)), encoding="utf-8")
    started = time.monotonic()
    proc = _spawn(scratch / "task.json", scratch / "outcome.json", scratch / "trial.log")
    why = _supervise(proc, watch, started + deadline_s)
    # A trial process killed (or crashed) mid-trial leaves its size-limited filesystems mounted in
    # its run directory, which could then be neither recorded as failed nor removed (EBUSY), and
    # its cgroups made.
    disk.sweep()
    cgroups.sweep()
    if why == "deadline":
        return _deadline_failure(task, job, deadline_s, worker)
    if (scratch / "outcome.json").is_file():
        return TrialOutcome(**json.loads((scratch / "outcome.json").read_text(encoding="utf-8")))
    detail = f"trial process ended with status {proc.returncode} on worker {worker} without an outcome"
    if why != "cancelled":
        detail += ":\n" + _tail(scratch / "trial.log")
    return TrialOutcome(
        job_id=job.id,
        run_dir="",
        status="interrupted" if why else "error",
        seconds=time.monotonic() - started,
        detail=detail,
    )


def run_remote(
    job_json: str,
    concurrent: bool,
    bundle: Bundle,
    blobs: Mapping[str, bytes],
    cancel_name: str,
    deadline_s: float,
    code: str,
) -> RemoteResult:
    """Run one trial on this worker (the Dask task); never raises for a trial that went wrong.

    `code` is the client's `code_digest()`: a worker running other assay code than the client
    refuses the trial (nothing is written, so it stays unfinished) instead of producing a run
    the client's runner would not have produced.
    """
    from distributed import get_worker

    started = time.time()
    worker = str(get_worker().address)
    job = Job.model_validate_json(job_json)
    watch = _watch(cancel_name)
    base = _base_dir()
    scratch = base / "runs" / uuid.uuid4().hex
    try:
        if code != code_digest():
            detail = f"worker {worker} runs different assay code than the client; install the same version everywhere"
            outcome = TrialOutcome(job_id=job.id, run_dir="", status="error", seconds=0.0, detail=detail)
            return RemoteResult(
                outcome=outcome, archive=None, worker=worker, started=started, ended=time.time(), trial_s=0.0
            )
        if watch.fired.is_set():
            outcome = TrialOutcome(
                job_id=job.id, run_dir="", status="skipped", seconds=0.0, detail=NOT_STARTED
            )
            return RemoteResult(
                outcome=outcome, archive=None, worker=worker, started=started, ended=time.time(), trial_s=0.0
            )
        project = materialise(base / "cache", bundle, blobs)
        scratch.mkdir(parents=True)
        task = TrialTask(
            job_json=job_json, project=str(project), run_dir=str(scratch / "run"), concurrent=concurrent
        )
        trial_started = time.monotonic()
        if os.environ.get(PROCESS_ENV) == "1":
            outcome = _in_process(task, job, scratch, watch, deadline_s, worker)
        else:
            outcome = _in_thread(task, job, watch, deadline_s, worker)
        trial_s = time.monotonic() - trial_started
        run_dir = Path(task.run_dir)
        archive = pack_run(run_dir) if (run_dir / RUN_FILE).is_file() else None
        return RemoteResult(
            outcome=outcome,
            archive=archive,
            worker=worker,
            started=started,
            ended=time.time(),
            trial_s=trial_s,
        )
    finally:
        _release(watch)
        remove_tree(scratch)
