"""grade_tree: every run under a folder, found by manifest, graded or reused.

A run with a grade.json is reused as-is; one whose grade was made by another grader
(code, checks or hidden files changed) is flagged `stale` and regraded only on request.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from harness.artifacts.records import Grade, read_grade
from harness.artifacts.run_tree import find_runs
from harness.grade.core import grade_run, is_stale

Action = Literal["graded", "regraded", "reused", "stale"]


@dataclass(frozen=True)
class TreeEntry:
    """What happened to one run of the tree."""

    run_dir: Path
    grade: Grade
    action: Action
    """graded (had none), regraded (on request), reused (current), stale (kept, made by another grader)."""


def _one(run_dir: Path, project: Path | None, regrade: bool, judge: Any) -> TreeEntry:
    existing = read_grade(run_dir)
    if existing is None:
        return TreeEntry(run_dir, grade_run(run_dir, project=project, regrade=True, judge=judge), "graded")
    if regrade:
        return TreeEntry(run_dir, grade_run(run_dir, project=project, regrade=True, judge=judge), "regraded")
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

    `parallel` > 1 grades in that many worker processes (a judge must then be picklable).
    """
    runs = find_runs(root)
    out: list[TreeEntry] = []
    if parallel <= 1 or len(runs) <= 1:
        for n, run_dir in enumerate(runs, 1):
            out.append(_one(run_dir, project, regrade, judge))
            if progress is not None:
                progress(n, len(runs), out[-1])
        return out
    with ProcessPoolExecutor(
        max_workers=parallel, mp_context=multiprocessing.get_context("forkserver")
    ) as pool:
        futures = [pool.submit(_one, run_dir, project, regrade, judge) for run_dir in runs]
        for n, future in enumerate(futures, 1):
            out.append(future.result())
            if progress is not None:
                progress(n, len(runs), out[-1])
    return out
