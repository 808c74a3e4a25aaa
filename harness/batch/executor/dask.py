"""The Dask executor: a matrix on a cluster that shares no filesystem with this machine.

`--executor dask --scheduler tcp://host:8786` (or `--scheduler-file F`). Every trial becomes one
task running `harness.batch.executor.remote.run_remote` on some worker; the project trees its job
needs travel content-addressed (`harness.batch.transport`), and its run directory comes back as one
archive that is installed atomically into the same run tree the local pool writes. A worker
that dies mid-trial sends nothing back, so its trial stays unfinished: Dask reruns it on
another worker, or the next `assay matrix` does.

Concurrency: each worker runs as many trials as it has threads (`dask worker --nthreads N`);
`--parallel N` caps it at N per worker through a Dask resource every trial asks for. Jobs whose
agent requires `resource:TAG` only go to workers started with `--resources TAG=...`.

Ctrl-C sets the run's cancel event: every running trial is ended on its worker, records itself
as interrupted and is sent back; trials not started yet are dropped. `future.cancel()` is
used only for those — it cannot stop a running task.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from distributed import WorkerPlugin

from compiler.contract import Job
from harness.batch.executor import requirements
from harness.batch.executor.remote import NOT_STARTED, RemoteResult, code_digest, run_remote
from harness.batch.executor.task import TrialOutcome, TrialTask
from harness.batch.transport import Bundle, Tree, hash_tree, install_run, job_paths, pack_tree
from harness.errors import UsageError

SLOT = "assay-slot"
"""The Dask resource `--parallel N` sets to N on every worker; each trial takes one."""
SLACK_S = 300.0


@dataclass(frozen=True)
class DaskSettings:
    """Where the cluster is and how to use it."""

    scheduler: str | None = None
    """Scheduler address, e.g. tcp://host:8786 or tls://host:8786."""
    scheduler_file: str | None = None
    """A scheduler file written by `dask scheduler --scheduler-file`."""
    resources: tuple[tuple[str, float], ...] = ()
    """Resources every trial asks for on top of its agent's `resource:` requirements."""
    grace_s: float = 30.0
    """How long Ctrl-C waits for running trials to record themselves as interrupted."""
    connect_timeout_s: float = 30.0
    slack_s: float = SLACK_S
    """Added to a trial's own limits to give its hard deadline on the worker."""


@dataclass
class DaskStats:
    """Timings of the last run by job id, for benchmarks (epoch seconds, as RemoteResult's)."""

    submitted: dict[str, float] = field(default_factory=dict)
    results: dict[str, RemoteResult] = field(default_factory=dict)
    received: dict[str, float] = field(default_factory=dict)


def hard_deadline(job: Job, slack_s: float = SLACK_S) -> float:
    """Seconds after which a worker ends a trial whatever it is doing (never less than 1)."""
    lim = job.limits
    sessions = max(1, len(job.scenario.steps))
    checks = sum(c.timeout_s for c in job.scenario.checks)
    return max(1.0, lim.timeout_s * sessions * (1 + job.options.infra_retries) + checks + slack_s)


def _identity(data: bytes) -> bytes:
    return data


class _Slots(WorkerPlugin):
    """Worker plugin: sets the per-worker trial slots on every worker, present and future."""

    name = "assay-slots"

    def __init__(self, slots: int) -> None:
        self.slots = slots

    async def setup(self, worker: Any) -> None:
        await worker.set_resources(**{SLOT: float(self.slots)})


def connect(settings: DaskSettings) -> Any:
    """A client of the configured scheduler (never a local cluster started by accident)."""
    from distributed import Client

    if bool(settings.scheduler) == bool(settings.scheduler_file):
        raise UsageError("--executor dask needs exactly one of --scheduler ADDRESS or --scheduler-file FILE")
    if settings.scheduler_file and not Path(settings.scheduler_file).is_file():
        raise UsageError(f"scheduler file {settings.scheduler_file} not found")
    try:
        if settings.scheduler_file:
            return Client(scheduler_file=settings.scheduler_file, timeout=settings.connect_timeout_s)
        return Client(settings.scheduler, timeout=settings.connect_timeout_s)
    except OSError as exc:
        raise UsageError(f"cannot reach the Dask scheduler: {exc}") from exc


def _check_code(client: Any) -> None:
    """Refuse a cluster whose workers run other assay code than this client."""
    mine = code_digest()
    theirs = client.run(code_digest)  # workers joining later are checked by each task
    strangers = sorted(address for address, digest in theirs.items() if digest != mine)
    if strangers:
        raise UsageError(
            f"{len(strangers)} worker(s) run different assay code than this client ({', '.join(strangers)}); "
            "install the same version everywhere"
        )


class DaskExecutor:
    """Runs trials on a Dask cluster."""

    name = "dask"

    def __init__(self, settings: DaskSettings | None = None, **options: Any) -> None:
        self.settings = settings or DaskSettings(**options)
        self.stats = DaskStats()

    def run(
        self,
        tasks: Sequence[TrialTask],
        *,
        parallel: int,
        on_outcome: Callable[[TrialOutcome], None],
        cancel: threading.Event,
        on_finished: Callable[[TrialOutcome], None] | None = None,
    ) -> list[TrialOutcome]:
        """Run every task on the cluster; see the module docstring for Ctrl-C."""

        def arrived(outcome: TrialOutcome) -> None:
            if on_finished is not None:
                on_finished(outcome)  # the run is installed in the local tree by now
            on_outcome(outcome)

        client = connect(self.settings)
        try:
            return _Run(client, self.settings, self.stats, parallel).run(tasks, arrived, cancel)
        finally:
            client.close()


class _Run:
    """One run of a batch on a connected client."""

    def __init__(self, client: Any, settings: DaskSettings, stats: DaskStats, parallel: int) -> None:
        self.client, self.settings, self.stats, self.parallel = client, settings, stats, parallel
        self.trees: dict[tuple[str, str], Tree] = {}
        self.tree_futures: dict[str, Any] = {}
        self.cancel_name = f"assay-cancel-{uuid.uuid4().hex}"

    def _bundle(self, job: Job, project: Path) -> Bundle:
        trees = []
        for rel in job_paths(job, project):
            key = (str(project), rel)
            if key not in self.trees:
                self.trees[key] = hash_tree(project, rel)
                digest = self.trees[key].digest
                if digest not in self.tree_futures:
                    self.tree_futures[digest] = self.client.submit(
                        _identity, pack_tree(project, rel), key=f"assay-tree-{digest}", pure=False
                    )
            trees.append(self.trees[key])
        return Bundle(trees=tuple(trees))

    def _resources(self, job: Job) -> dict[str, float] | None:
        wanted = dict(self.settings.resources)
        # A malformed entry is reported as failed_to_run by the worker, with the reason.
        with contextlib.suppress(requirements.RequirementError):
            wanted.update(requirements.parse(job.agent.requires).resources)
        if self.parallel > 0:
            wanted[SLOT] = 1.0
        return wanted or None

    def _submit(self, task: TrialTask) -> Any:
        job = task.job
        bundle = self._bundle(job, Path(task.project))
        blobs = {t.digest: self.tree_futures[t.digest] for t in bundle.trees}
        self.stats.submitted[job.id] = time.time()
        return self.client.submit(
            run_remote,
            task.job_json,
            task.concurrent,
            bundle,
            blobs,
            self.cancel_name,
            hard_deadline(job, self.settings.slack_s),
            code_digest(),
            key=f"assay-trial-{uuid.uuid4().hex}",
            pure=False,
            resources=self._resources(job),
        )

    def _finish(self, task: TrialTask, future: Any) -> TrialOutcome:
        job_id = task.job.id
        if future.status != "finished":
            detail = (
                f"{type(future.exception()).__name__}: {future.exception()}"
                if future.status == "error"
                else future.status
            )
            return TrialOutcome(
                job_id=job_id,
                run_dir=task.run_dir,
                status="error",
                seconds=0.0,
                detail=f"no run came back from the cluster ({detail}); rerun on resume",
            )
        result: RemoteResult = future.result()
        self.stats.results[job_id] = result
        self.stats.received[job_id] = time.time()
        if result.archive is not None:
            install_run(result.archive, Path(task.run_dir))
        return replace(result.outcome, run_dir=task.run_dir)

    def run(
        self, tasks: Sequence[TrialTask], on_outcome: Callable[[TrialOutcome], None], cancel: threading.Event
    ) -> list[TrialOutcome]:
        from distributed import Event, as_completed, wait

        _check_code(self.client)
        if self.parallel > 0:
            self.client.register_plugin(_Slots(self.parallel), name=_Slots.name)
        event = Event(self.cancel_name, client=self.client)
        outcomes: list[TrialOutcome] = []
        by_key: dict[str, TrialTask] = {}
        futures: list[Any] = []
        stopped = False
        try:
            for task in tasks:
                future = self._submit(task)
                by_key[future.key] = task
                futures.append(future)
            for future in as_completed(futures):
                outcome = self._finish(by_key[future.key], future)
                outcomes.append(outcome)
                on_outcome(outcome)
                if cancel.is_set() and not stopped:
                    # The caller stopped the batch (fail-fast): running trials come back interrupted,
                    # the rest as skipped, as on the local pool.
                    event.set()
                    stopped = True
        except KeyboardInterrupt:
            cancel.set()
            event.set()
            seen = {o.job_id for o in outcomes}
            started = [f for f in futures if by_key[f.key].job.id not in seen]
            # Running trials end on their workers and come back as interrupted runs; queued ones
            # see the event at start and return at once.
            # Whatever is still running after the grace period is ended on its worker by the event.
            with contextlib.suppress(TimeoutError):
                wait(started, timeout=self.settings.grace_s)
            for future in started:
                if future.done():
                    outcome = self._finish(by_key[future.key], future)
                    if outcome.detail != NOT_STARTED:  # dropped, as the local pool drops them
                        outcomes.append(outcome)
                        on_outcome(outcome)
            self.client.cancel([f for f in started if not f.done()])
            raise
        finally:
            self.client.cancel(list(self.tree_futures.values()))
        return outcomes
