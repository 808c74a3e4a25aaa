"""assay's run-time half: run trials, grade runs, report on them (docs/architecture.md is the map).

The public API, each name imported on first use so that `assay --help` loads none of it:

    run_trial(job, project=..., run_dir=...) -> RunRecord     one trial into its run directory
    grade_run(run_dir, project=...) -> Grade                  the grader's verdict on one run
    grade_tree(root, project=...) -> list[TreeEntry]          every run under a folder
    summarize(root, project=...) -> Summary                   a run tree into summary.json's model
    results(tree) -> pandas.DataFrame                          every run with every grade field (index)
    validate_scenarios(scenarios, project) -> ValidityReport  do the checks tell done from not done?
    read_run(run_dir) / read_grade(run_dir)                   run.json / grade.json, schema-checked
    find_runs(root) -> list[Path]                             run directories, found by run.json
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.artifacts.records import Grade, RunRecord, read_grade, read_run
    from harness.artifacts.run_tree import find_runs
    from harness.grade import grade_run, grade_tree
    from harness.report.build import build_summary as summarize
    from harness.report.results import results
    from harness.trial import run_trial
    from harness.validity import validate as validate_scenarios

_PUBLIC = {
    "Grade": ("harness.artifacts.records", "Grade"),
    "RunRecord": ("harness.artifacts.records", "RunRecord"),
    "find_runs": ("harness.artifacts.run_tree", "find_runs"),
    "grade_run": ("harness.grade", "grade_run"),
    "grade_tree": ("harness.grade", "grade_tree"),
    "read_grade": ("harness.artifacts.records", "read_grade"),
    "read_run": ("harness.artifacts.records", "read_run"),
    "results": ("harness.report.results", "results"),
    "run_trial": ("harness.trial", "run_trial"),
    "summarize": ("harness.report.build", "build_summary"),
    "validate_scenarios": ("harness.validity", "validate"),
}

__all__ = [
    "Grade",
    "RunRecord",
    "find_runs",
    "grade_run",
    "grade_tree",
    "read_grade",
    "read_run",
    "results",
    "run_trial",
    "summarize",
    "validate_scenarios",
]


def __getattr__(name: str) -> Any:
    try:
        module, attr = _PUBLIC[name]
    except KeyError:
        raise AttributeError(f"module 'harness' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value  # once imported, a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
