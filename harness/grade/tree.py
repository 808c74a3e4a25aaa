"""grade_tree: every run under a folder, found by manifest, graded or reused.

A run with a grade.json is reused as-is; one whose grade was made by another grader
(code, checks or hidden files changed) is flagged `stale` and regraded only on request.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.util
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from harness.artifacts.records import Grade, read_grade
from harness.artifacts.run_tree import find_runs
from harness.grade.core import grade_run, is_stale
from harness.grade.session import Grading

Action = Literal["graded", "regraded", "reused", "stale"]


@dataclass(frozen=True)
class TreeEntry:
    """What happened to one run of the tree."""

    run_dir: Path
    grade: Grade
    action: Action
    """graded (had none), regraded (on request), reused (current), stale (kept, made by another grader)."""


_WORKER: list[Grading] = []
"""The grading session of this worker process (`_start_worker`), kept for every run it grades."""


def _start_worker() -> None:
    grading = Grading()
    _WORKER.append(grading)
    # a pool's worker ends through multiprocessing's own exit, which runs these and not atexit's
    multiprocessing.util.Finalize(grading, grading.close, exitpriority=0)


def _one(
    run_dir: Path, project: Path | None, regrade: bool, judge: Any, grading: Grading | None = None
) -> TreeEntry:
    grading = grading or (_WORKER[0] if _WORKER else None)
    existing = read_grade(run_dir)
    if existing is None or regrade:
        grade = grade_run(run_dir, project=project, regrade=True, judge=judge, grading=grading)
        return TreeEntry(run_dir, grade, "graded" if existing is None else "regraded")
    stale = is_stale(run_dir, project=project)
    return TreeEntry(run_dir, existing, "stale" if stale else "reused")


def grade_tree(
    root: Path,
    *,
    project: Path | None = None,
    regrade: bool = False,
    judge: Any = None,
    parallel: int = 1,
    progress: Callable[[int, int, TreeEntry], None] | None = None,
) -> list[TreeEntry]:
    """Grade every run under root (root itself may be one run), in run order.

    `parallel` > 1 grades in that many worker processes (a judge must then be picklable). Each
    grader (this process, or each worker) keeps one grading session for all its runs
    (`harness.grade.session`: its scratch folder and warm check servers).
    """
    runs = find_runs(root)
    out: list[TreeEntry] = []
    if parallel <= 1 or len(runs) <= 1:
        with Grading() as grading:
            for n, run_dir in enumerate(runs, 1):
                out.append(_one(run_dir, project, regrade, judge, grading))
                if progress is not None:
                    progress(n, len(runs), out[-1])
        return out
    context = multiprocessing.get_context("forkserver")
    # Workers fork from a server that imported the grader once, instead of each importing it.
    context.set_forkserver_preload(["__main__", __name__])
    with ProcessPoolExecutor(max_workers=parallel, mp_context=context, initializer=_start_worker) as pool:
        futures = [pool.submit(_one, run_dir, project, regrade, judge) for run_dir in runs]
        for n, future in enumerate(futures, 1):
            out.append(future.result())
            if progress is not None:
                progress(n, len(runs), out[-1])
    return out
