"""The task a Dask worker runs for one trial: unpack the project, run the trial, ship it back.

`run_remote` receives the job, the content addresses of the project trees it needs and the
trees' bytes (Dask moves each tree to a worker once and keeps it there; the worker also
caches it on disk by digest), assembles a project folder, runs the trial as a child process
(`harness.executor.trial_proc`) and returns its run directory as one archive.

Cancellation never relies on `future.cancel()`, which does not stop a running task: every
run has a distributed `Event`; one thread per worker and run long-polls it, and when it is
set every trial of that run on this worker is told so on its stdin (the runner kills the agent
and records the run as interrupted), then, after a grace period, SIGKILL for whatever is left
of its tree. A trial past its hard deadline is ended the same way and recorded as
`failed_to_run`.
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
from harness.executor.proctree import kill_tree
from harness.executor.trial import TrialOutcome, TrialTask
from harness.transport import Bundle, materialise, pack_run, remove_tree

GRACE_S = 10.0
"""How long an interrupted trial may take to record itself before its tree is killed."""
POLL_S = 2.0
"""Long-poll period of the cancel event (one request per worker and run, not per trial)."""
_IDLE_S = 60.0

NOT_STARTED = "cancelled before start"
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
                    self.fired.set()
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
            [*prefix, sys.executable, "-m", "harness.executor.trial_proc", str(task_file), str(outcome_file)],
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

    from harness.executor.trial_proc import write_failed_run

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
                job_id=job.id, run_dir="", status="interrupted", seconds=0.0, detail=NOT_STARTED
            )
            return RemoteResult(
                outcome=outcome, archive=None, worker=worker, started=started, ended=time.time(), trial_s=0.0
            )
        project = materialise(base / "cache", bundle, blobs)
        scratch.mkdir(parents=True)
        run_dir = scratch / "run"
        task = TrialTask(job_json=job_json, project=str(project), run_dir=str(run_dir), concurrent=concurrent)
        (scratch / "task.json").write_text(json.dumps(asdict(task)), encoding="utf-8")
        trial_started = time.monotonic()
        proc = _spawn(scratch / "task.json", scratch / "outcome.json", scratch / "trial.log")
        why = _supervise(proc, watch, trial_started + deadline_s)
        trial_s = time.monotonic() - trial_started
        if why == "deadline":
            outcome = write_failed_run(
                job,
                run_dir,
                f"trial passed the executor's hard deadline of {deadline_s:g} s on worker {worker}",
                project=project,
                concurrent=concurrent,
            )
        elif (scratch / "outcome.json").is_file():
            outcome = TrialOutcome(**json.loads((scratch / "outcome.json").read_text(encoding="utf-8")))
        else:
            detail = (
                f"trial process ended with status {proc.returncode} on worker {worker} without an outcome"
            )
            if why != "cancelled":
                detail += ":\n" + _tail(scratch / "trial.log")
            outcome = TrialOutcome(
                job_id=job.id,
                run_dir="",
                status="interrupted" if why else "error",
                seconds=trial_s,
                detail=detail,
            )
        archive = pack_run(run_dir) if (run_dir / "run.json").is_file() else None
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
