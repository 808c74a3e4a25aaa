"""grade_tree: every run under a folder, found by manifest, graded or reused.

A run with a grade.json is reused as-is; one whose grade was made by another grader
(code, checks or hidden files changed) is flagged `stale` and regraded only on request.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from harness.artifacts.records import Grade, read_grade
from harness.artifacts.run_tree import find_runs
from harness.grade.core import grade_run, is_stale
from harness.grade.session import Graders, Grading

Action = Literal["graded", "regraded", "reused", "stale"]


@dataclass(frozen=True)
class TreeEntry:
    """What happened to one run of the tree."""

    run_dir: Path
    grade: Grade
    action: Action
    """graded (had none), regraded (on request), reused (current), stale (kept, made by another grader)."""


def _one(run_dir: Path, project: Path | None, regrade: bool, judge: Any, grading: Grading) -> TreeEntry:
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

    `parallel` > 1 grades that many runs at once, in threads: grading waits on its check
    processes far more than it computes. Each grader (thread) keeps one grading session for all
    its runs (`harness.grade.session`: its scratch folder and warm check servers).
    """
    runs = find_runs(root)
    out: list[TreeEntry] = []
    graders = Graders()
    try:
        if parallel <= 1 or len(runs) <= 1:
            for n, run_dir in enumerate(runs, 1):
                out.append(_one(run_dir, project, regrade, judge, graders.mine()))
                if progress is not None:
                    progress(n, len(runs), out[-1])
            return out
        pool = ThreadPoolExecutor(max_workers=parallel, thread_name_prefix="grade")
        try:
            futures = [
                pool.submit(lambda run: _one(run, project, regrade, judge, graders.mine()), run_dir)
                for run_dir in runs
            ]
            for n, future in enumerate(futures, 1):
                out.append(future.result())
                if progress is not None:
                    progress(n, len(runs), out[-1])
        finally:  # an error or Ctrl-C: the runs not started are dropped, the ones running end
            pool.shutdown(wait=True, cancel_futures=True)
        return out
    finally:
        graders.close()
