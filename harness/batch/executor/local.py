"""The local executor: a thread pool on this machine (`--parallel N`), spread over one forked
process per core where there is more than one (`harness.batch.executor.procs`).

A trial spends most of its time waiting on its agent's processes, which threads do well; the
harness's own Python work of many short trials is what the processes spread. Each worker
reports its outcome itself, right after its trial and before it takes the next one, so a
fail-fast stop (the callback sets `cancel`) reaches the very next trial. Ctrl-C sets the
same event: every running trial kills its agent's whole tree and records itself as
interrupted (rerun on resume); trials not started yet are dropped.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from harness.batch.executor import procs
from harness.batch.executor.task import TrialOutcome, TrialTask, execute, graders, warm


class LocalExecutor:
    """Runs trials in a pool of threads."""

    name = "local"

    def run(
        self,
        tasks: Sequence[TrialTask],
        *,
        parallel: int,
        on_outcome: Callable[[TrialOutcome], None],
        cancel: threading.Event,
        on_finished: Callable[[TrialOutcome], None] | None = None,
    ) -> list[TrialOutcome]:
        workers = procs.usable(parallel, len(tasks))
        if workers:
            for isolation in sorted({t.job.options.isolation for t in tasks}):
                warm(isolation)  # probed once here, inherited by every worker
            return procs.run(
                tasks,
                parallel=parallel,
                workers=workers,
                on_outcome=on_outcome,
                cancel=cancel,
                on_finished=on_finished,
            )

        sessions = graders()

        def one(task: TrialTask) -> TrialOutcome:
            outcome = execute(task, cancel, sessions)
            if on_finished is not None:
                on_finished(outcome)
            on_outcome(outcome)
            return outcome

        outcomes: list[TrialOutcome] = []
        pool = ThreadPoolExecutor(max_workers=max(1, parallel), thread_name_prefix="trial")
        pending: set[Future[TrialOutcome]] = set()
        try:
            pending = {pool.submit(one, task) for task in tasks}
            while pending:
                done, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
                outcomes.extend(future.result() for future in done)
        except KeyboardInterrupt:
            cancel.set()
            for future in pending:
                future.cancel()
            outcomes.extend(f.result() for f in pending if not f.cancelled())
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
            if sessions is not None:
                sessions.close()
        return outcomes
