"""The local executor: a thread pool on this machine (`--parallel N`).

Threads suffice: a trial spends its time waiting on its agent's processes. Ctrl-C sets the
shared cancel event, so every running trial kills its agent's whole tree and records itself
as interrupted (rerun on resume); trials not started yet are dropped.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from harness.executor.trial import TrialOutcome, TrialTask, execute


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
    ) -> list[TrialOutcome]:
        outcomes: list[TrialOutcome] = []
        pool = ThreadPoolExecutor(max_workers=max(1, parallel), thread_name_prefix="trial")
        pending: set[Future[TrialOutcome]] = set()
        try:
            pending = {pool.submit(execute, task, cancel) for task in tasks}
            while pending:
                done, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
                for future in done:
                    outcome = future.result()
                    outcomes.append(outcome)
                    on_outcome(outcome)
        except KeyboardInterrupt:
            cancel.set()
            for future in pending:
                future.cancel()
            for future in pending:
                if not future.cancelled():
                    outcome = future.result()
                    outcomes.append(outcome)
                    on_outcome(outcome)
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        return outcomes
