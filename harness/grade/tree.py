"""grade_tree: every run under a folder, found by manifest, graded or reused.

A run with a grade.json is reused as-is; one whose grade was made by another grader
(code, checks or hidden files changed) is flagged `stale` and regraded only on request.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from harness.grade.core import grade_run, is_stale
from harness.records import Grade, find_runs, read_grade

Action = Literal["graded", "regraded", "reused", "stale"]


@dataclass(frozen=True)
class TreeEntry:
    """What happened to one run of the tree."""

    run_dir: Path
    grade: Grade
    action: Action
    """graded (had none), regraded (on request), reused (current), stale (kept, made by another grader)."""


def grade_tree(
    root: Path,
    *,
    project: Path | None = None,
    regrade: bool = False,
    judge: Any = None,
    progress: Callable[[int, int, TreeEntry], None] | None = None,
) -> list[TreeEntry]:
    """Grade every run under root (root itself may be one run)."""
    runs = find_runs(root)
    out: list[TreeEntry] = []
    for n, run_dir in enumerate(runs, 1):
        existing = read_grade(run_dir)
        if existing is None:
            entry = TreeEntry(
                run_dir, grade_run(run_dir, project=project, regrade=True, judge=judge), "graded"
            )
        elif regrade:
            entry = TreeEntry(
                run_dir, grade_run(run_dir, project=project, regrade=True, judge=judge), "regraded"
            )
        else:
            stale = is_stale(run_dir, project=project)
            entry = TreeEntry(run_dir, existing, "stale" if stale else "reused")
        out.append(entry)
        if progress is not None:
            progress(n, len(runs), entry)
    return out
