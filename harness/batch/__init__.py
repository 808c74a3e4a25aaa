"""Running a batch of jobs: resume, shuffled order, an executor, a progress line.

Shared by `assay run` and `assay matrix`. Finished trials (same job hash, not interrupted)
are skipped; everything else is (re)run. The order is shuffled with the matrix seed so
trials of one cell do not all share the same minutes of machine load.
"""

from __future__ import annotations

import random
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from compiler.contract import Job
from harness.artifacts.run_tree import is_finished, run_dir_for
from harness.batch.executor import TrialOutcome, TrialTask
from harness.batch.executor import select as select_executor  # `select` here is the sibling module


@dataclass(frozen=True)
class Plan:
    """What a batch will do."""

    tasks: tuple[TrialTask, ...]
    skipped: tuple[str, ...]


def plan(
    jobs: Iterable[Job],
    *,
    project: Path,
    runs_root: Path,
    seed: int,
    force: bool = False,
    concurrent: bool = False,
) -> Plan:
    """Order the jobs by the seed and drop the finished ones (unless forced)."""
    ordered = sorted(jobs, key=lambda j: j.id)
    random.Random(seed).shuffle(ordered)
    tasks: list[TrialTask] = []
    skipped: list[str] = []
    for job in ordered:
        run_dir = run_dir_for(job, runs_root)
        if not force and is_finished(run_dir, job):
            skipped.append(job.id)
            continue
        tasks.append(
            TrialTask(
                job_json=job.model_dump_json(),
                project=str(project),
                run_dir=str(run_dir),
                concurrent=concurrent,
            )
        )
    return Plan(tasks=tuple(tasks), skipped=tuple(skipped))


@dataclass
class Progress:
    """The progress line on stderr: done/total, pass/fail/other counts, ETA."""

    total: int
    stream: TextIO = field(default_factory=lambda: sys.stderr)
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
            end = "\n" if not self.stream.isatty() or sum(self.counts.values()) == self.total else ""
            prefix = "\r\x1b[2K" if self.stream.isatty() else ""
            self.stream.write(prefix + self.line() + end)
            self.stream.flush()


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
) -> list[TrialOutcome]:
    """Run the tasks with the named executor, printing progress; re-raises KeyboardInterrupt.

    With fail_fast the first failed or errored trial stops the batch: running trials are
    recorded as interrupted, trials not started are skipped (both rerun on resume).
    """
    progress = Progress(total=len(tasks), stream=stream or sys.stderr)
    cancel = threading.Event()

    def on_outcome(outcome: TrialOutcome) -> None:
        progress(outcome)
        if fail_fast and outcome.status in ("failed", "error"):
            cancel.set()

    return select_executor(executor, **(options or {})).run(
        tasks, parallel=parallel, on_outcome=on_outcome, cancel=cancel
    )


def summary(outcomes: Sequence[TrialOutcome]) -> dict[str, int]:
    """Counts by status."""
    return dict(sorted(Counter(o.status for o in outcomes).items()))
