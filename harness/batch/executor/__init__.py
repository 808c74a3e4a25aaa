"""Executors: how a batch of trials is spread over workers (the local pool, or Dask).

An executor takes `TrialTask`s and runs `harness.batch.executor.task.execute` on each — the pure
per-trial function (a job in, a run directory out) — reporting every `TrialOutcome` to a
callback as it arrives. `select(name)` returns one by short name or `pkg.mod:Class`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from harness.batch.executor.task import TrialOutcome, TrialTask
from harness.plugins import Plugins

REGISTRY: dict[str, str] = {
    "local": "harness.batch.executor.local:LocalExecutor",
    "dask": "harness.batch.executor.dask:DaskExecutor",
}
EXECUTORS = Plugins("executor", REGISTRY, dotted="pkg.mod:Class")

__all__ = ["REGISTRY", "Executor", "TrialOutcome", "TrialTask", "select"]


class Executor(Protocol):
    """Runs trials somewhere and reports their outcomes."""

    name: str

    def run(
        self,
        tasks: Sequence[TrialTask],
        *,
        parallel: int,
        on_outcome: Callable[[TrialOutcome], None],
        cancel: threading.Event,
        on_finished: Callable[[TrialOutcome], None] | None = None,
    ) -> list[TrialOutcome]:
        """Run every task (in the given order, up to `parallel` at once); return all outcomes.

        `on_outcome` is called once per trial as soon as it ends, in this process, from any
        thread (it is thread-safe); it may set `cancel` (fail-fast), after which trials not yet
        started must be skipped (`execute` does that itself when handed the event).
        `on_finished` (derived files of a finished run, such as its page) is called before it,
        where the run directory is: in the process that ran the trial, or here once a run has been
        brought back.

        On KeyboardInterrupt: set `cancel`, let running trials record themselves as
        interrupted, drop the pending ones, and re-raise.
        """
        ...


def select(name: str, **options: Any) -> Executor:
    """The executor called `name` (a registered short name or "pkg.mod:Class"), built with `options`."""
    instance: Executor = EXECUTORS.load(name)(**options)
    return instance
