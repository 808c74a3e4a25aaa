"""The local pool across processes: trials spread over one forked worker per core.

A trial's harness side is Python (preparing, watching, capturing, grading, writing records), and
in one process that work shares one interpreter lock: with the machine's other cores idle, many
short trials wait on it rather than on their agents. So where the machine has more than one core
and the batch more than one trial at a time, the local executor forks workers (`os.fork`, while the
runner has no other thread: a fork then copies nothing half-held) that each run their share of the
`--parallel` slots in threads, as the single-process pool does.

The runner keeps the schedule: it hands each worker the index of its next task as a slot frees up
(in the batch's shuffled order), hears every outcome over a pipe and reports it, so progress,
fail-fast and the exit code are the same as in one process. Each worker writes a finished run's
derived files (`on_finished`) itself, where the run is.

Stopping is the runner's: Ctrl-C, SIGTERM or SIGHUP reach the runner, which tells every worker to
cancel; running trials record themselves as interrupted and come back, trials not started are
dropped. The workers themselves ignore those signals (their own children start with the default
actions), die with the runner (`PR_SET_PDEATHSIG`), and never return into the runner's code (they
leave with `os._exit`). A worker that dies leaves its running trials unfinished (rerun on resume)
and reported as errors; what those trials had mounted and the cgroups they had made are named after
the worker too (`harness.sandbox.identity.owner_tag`), so the runner removes them as soon as it
hears of the death, and once more when the batch ends (`_sweep`).
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import importlib
import json
import os
import selectors
import signal
import sys
import threading
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field

from harness.batch.executor.task import TrialOutcome, TrialTask, execute, grader_available, graders
from harness.sandbox import disk, identity
from harness.sandbox.isolation import cgroups

PR_SET_PDEATHSIG = 1
CANCEL = "cancel"


def usable(parallel: int, tasks: int) -> int:
    """How many worker processes a batch gets (0: run it in this process's threads): `planned`,
    unless another thread runs here (a fork could copy a lock that thread holds, held forever)."""
    width = planned(parallel, tasks)
    return width if width and threading.active_count() == 1 else 0


def planned(parallel: int, tasks: int) -> int:
    """One worker per core the runner may use, at most one per slot and per task, none below two;
    `ASSAY_LOCAL_PROCESSES=N` sets the number of cores to count (0: threads only)."""
    chosen = os.environ.get("ASSAY_LOCAL_PROCESSES", "").strip()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    width = min(int(chosen) if chosen.isdigit() else cores, parallel, tasks)
    return width if width >= 2 and hasattr(os, "fork") else 0


@dataclass
class _Worker:
    pid: int
    send: int
    """The runner's end of the pipe to the worker (task indexes, `cancel`)."""
    hear: int
    """The runner's end of the pipe from the worker (one outcome per line)."""
    slots: int
    running: set[int] = field(default_factory=set)
    buffer: bytes = b""


def run(
    tasks: Sequence[TrialTask],
    *,
    parallel: int,
    workers: int,
    on_outcome: Callable[[TrialOutcome], None],
    cancel: threading.Event,
    on_finished: Callable[[TrialOutcome], None] | None,
) -> list[TrialOutcome]:
    """Run the tasks over `workers` forked processes, `parallel` at a time in all (see the module)."""
    # Mounts a killed runner left are swept here, once: workers sweeping at once would unmount
    # under each other's feet while one of them clears a run directory.
    disk.sweep_once()
    if grader_available():
        importlib.import_module("harness.grade")  # imported once, here: every worker shares it
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()  # else what they buffer is written again by every worker
    gc.freeze()  # the heap so far is shared with the workers: the collector never writes to it
    try:
        pool = [_fork(tasks, slots, on_finished) for slots in _shares(parallel, workers)]
    finally:
        gc.unfreeze()
    outcomes: list[TrialOutcome] = []
    pending = deque(range(len(tasks)))
    selector = selectors.DefaultSelector()
    for worker in pool:
        selector.register(worker.hear, selectors.EVENT_READ, worker)
    told = False
    try:
        while True:
            if cancel.is_set() and not told:
                _tell_all(pool, CANCEL)
                told = True
            if cancel.is_set():
                while pending:  # not started: skipped, as the single-process pool skips them
                    outcome = execute(tasks[pending.popleft()], cancel)
                    outcomes.append(outcome)
                    on_outcome(outcome)
            _dispatch(pool, pending)
            if not any(w.running for w in pool):
                break
            for key, _ in selector.select(timeout=0.5):
                _hear(key.data, tasks, outcomes, on_outcome, selector)
        for index in pending:  # every worker died before these started
            task = tasks[index]
            outcome = TrialOutcome(
                task.job.id, task.run_dir, "error", 0.0, "no worker process was left to run it"
            )
            outcomes.append(outcome)
            on_outcome(outcome)
    except KeyboardInterrupt:
        cancel.set()
        _tell_all(pool, CANCEL)
        while any(w.running for w in pool):  # running trials come back as interrupted
            for key, _ in selector.select(timeout=0.5):
                _hear(key.data, tasks, outcomes, on_outcome, selector)
        raise
    finally:
        for worker in pool:
            with contextlib.suppress(OSError):
                os.close(worker.send)  # end of work: the worker finishes what it has and leaves
        for worker in pool:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(worker.pid, 0)
            with contextlib.suppress(OSError):
                os.close(worker.hear)
        selector.close()
        _sweep()  # a worker that died late, or whose strays were still leaving at the first sweep
    return outcomes


def _shares(parallel: int, workers: int) -> list[int]:
    """`parallel` slots split over `workers` (the first ones get the remainder)."""
    base, extra = divmod(parallel, workers)
    return [base + (1 if i < extra else 0) for i in range(workers)]


def _dispatch(pool: list[_Worker], pending: deque[int]) -> None:
    while pending:
        free = [w for w in pool if len(w.running) < w.slots and w.send >= 0]
        if not free:
            return
        worker = min(free, key=lambda w: len(w.running))
        index = pending.popleft()
        try:
            os.write(worker.send, f"{index}\n".encode())
        except OSError:  # the worker is gone: its death is heard on its other pipe
            worker.send = -1
            pending.appendleft(index)
            continue
        worker.running.add(index)


def _tell_all(pool: list[_Worker], word: str) -> None:
    for worker in pool:
        if worker.send >= 0:
            with contextlib.suppress(OSError):
                os.write(worker.send, f"{word}\n".encode())


def _hear(
    worker: _Worker,
    tasks: Sequence[TrialTask],
    outcomes: list[TrialOutcome],
    on_outcome: Callable[[TrialOutcome], None],
    selector: selectors.BaseSelector,
) -> None:
    chunk = os.read(worker.hear, 65536)
    if not chunk:  # the worker died: what it ran is left unfinished (rerun on resume)
        selector.unregister(worker.hear)
        status = _reap(worker.pid)
        _sweep()  # its trials' mounts and cgroups: nothing of it will remove them
        for index in sorted(worker.running):
            task = tasks[index]
            outcome = TrialOutcome(
                task.job.id, task.run_dir, "error", 0.0, f"the worker process running it died ({status})"
            )
            outcomes.append(outcome)
            on_outcome(outcome)
        worker.running.clear()
        worker.send = -1
        return
    worker.buffer += chunk
    *lines, worker.buffer = worker.buffer.split(b"\n")
    for line in lines:
        index, data = json.loads(line)
        worker.running.discard(index)
        outcome = TrialOutcome(**data)
        outcomes.append(outcome)
        on_outcome(outcome)


def _sweep() -> None:
    """Remove what harness processes that are gone left mounted or made (a dead worker's trials):
    only theirs, so the trials of the live workers go on untouched."""
    if os.geteuid() == 0:
        disk.sweep()
        cgroups.sweep()


def _reap(pid: int) -> str:
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:
        return "already reaped"
    if os.WIFSIGNALED(status):
        return f"killed by {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exit {os.WEXITSTATUS(status)}"


def _fork(
    tasks: Sequence[TrialTask], slots: int, on_finished: Callable[[TrialOutcome], None] | None
) -> _Worker:
    to_worker = os.pipe()
    from_worker = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the worker: never returns into the runner's frames (their finally blocks are the runner's)
        code = 1
        try:
            os.close(to_worker[1])
            os.close(from_worker[0])
            _settle(parent)
            _serve(to_worker[0], from_worker[1], tasks, slots, on_finished)
            code = 0
        except BaseException:  # the worker's boundary: say why, then leave without unwinding
            with contextlib.suppress(Exception):
                import traceback

                traceback.print_exc()
        finally:
            with contextlib.suppress(Exception):
                sys.stderr.flush()
            os._exit(code)
    os.close(to_worker[0])
    os.close(from_worker[1])
    return _Worker(pid=pid, send=to_worker[1], hear=from_worker[0], slots=slots)


def _quiet(_signum: int, _frame: object) -> None:
    """A stop signal reaches the runner too, which cancels this worker's trials (see the module)."""


def _settle(parent: int) -> None:
    """Signals and lifetime of a fresh worker."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _quiet)  # a Python handler, not SIG_IGN: children exec with the default
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the runner died before the line above took effect
        os._exit(1)
    identity.adopt(parent)  # what this worker mounts or makes is swept once it or the runner is gone


def _serve(
    hear: int,
    say: int,
    tasks: Sequence[TrialTask],
    slots: int,
    on_finished: Callable[[TrialOutcome], None] | None,
) -> None:
    cancel = threading.Event()
    lock = threading.Lock()
    sessions = graders()

    def one(index: int) -> None:
        outcome = execute(tasks[index], cancel, sessions)
        if on_finished is not None:
            with contextlib.suppress(Exception):  # derived files never cost the trial its outcome
                on_finished(outcome)
        line = json.dumps([index, asdict(outcome)]).encode() + b"\n"
        with lock:
            os.write(say, line)

    pool = ThreadPoolExecutor(max_workers=max(1, slots), thread_name_prefix="trial")
    buffer = b""
    try:
        while True:
            chunk = os.read(hear, 4096)
            if not chunk:
                break  # no more work
            buffer += chunk
            *words, buffer = buffer.split(b"\n")
            for word in words:
                if word == CANCEL.encode():
                    cancel.set()
                elif word:
                    pool.submit(one, int(word))
    finally:
        pool.shutdown(wait=True)
        if sessions is not None:
            sessions.close()
        os.close(say)


__all__ = ["planned", "run", "usable"]
