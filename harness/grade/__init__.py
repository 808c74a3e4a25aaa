"""The grader: a run directory in, grade.json out (see docs/run-directory.md).

`grade_run` grades one run; `grade_tree` every run under a folder; `is_stale` says
whether a stored grade was made by another grader. `check_judge_config` refuses a
misconfigured judge before a matrix starts. A `Grading` session, passed to `grade_run` run after
run by one grader, keeps its scratch folder and warm check servers between them.
"""

from __future__ import annotations

from harness.grade.core import current_hash, grade_run, is_stale
from harness.grade.judge_client import JudgeConfigError, check_judge_config
from harness.grade.session import Graders, Grading
from harness.grade.tree import TreeEntry, grade_tree

__all__ = [
    "Graders",
    "Grading",
    "JudgeConfigError",
    "TreeEntry",
    "check_judge_config",
    "current_hash",
    "grade_run",
    "grade_tree",
    "is_stale",
]
