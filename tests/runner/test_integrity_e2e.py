"""The denominator, end to end: real trials, graded, reported.

What the agent's own doing ends early (here: running out its time in one condition) stays in the
rates — graded on what it left, failing, counted per agent and condition — so an agent about to
fail cannot take its run out of the rates. Exclusions are kept for causes on the harness's side
(here: an adapter the harness's launch check finds cannot start in one condition); the report lists
them per agent and condition with their reasons, and a treatment that lost a different share of its
runs than its control is a warning.
"""

from __future__ import annotations

from pathlib import Path

from compiler.contract import Limits, Options
from harness.artifacts.records import RunStatus
from harness.artifacts.run_tree import run_dir_for
from harness.grade import grade_run
from harness.report import build_summary
from harness.trial import run_trial
from tests.helpers import bin_cell, command_agent, make_job, none_cell


def _matrix(tmp_path: Path, project: Path, command: str, *, timeout_s: float = 60) -> Path:
    runs = tmp_path / "runs"
    agent = command_agent(command)
    for cell in (none_cell(), bin_cell()):
        for trial in (1, 2):
            job = make_job(
                agent=agent,
                cell=cell,
                trial=trial,
                limits=Limits(timeout_s=timeout_s),
                options=Options(isolation="none", infra_retries=0),
            )
            run_dir = run_dir_for(job, runs)
            run_trial(job, project=project, run_dir=run_dir)
            grade_run(run_dir)
    return runs


def test_an_agent_that_runs_out_its_time_in_one_condition_stays_in_its_denominator(
    project: Path, tmp_path: Path
) -> None:
    runs = _matrix(
        tmp_path,
        project,
        "if command -v mytool >/dev/null; then echo 'def (' >> app/main.py; sleep 60; fi; exit 0",
        timeout_s=2,
    )
    summary = build_summary(runs)
    diagnostics = summary.diagnostics
    assert [d for d in diagnostics if d.kind in ("excluded", "exclusions-differ")] == []
    assert [d.message for d in diagnostics if d.kind == "agent-ended"] == [
        "cmd bin/none/off: 2/2 runs ended by the agent's own doing, graded on what they left (in its "
        "rates): timed out (2)"
    ]
    (treated,) = [g for g in summary.groups if g.by == "condition" and g.condition == "bin/none/off"]
    assert (treated.counts.graded, treated.counts.failed_to_run, treated.passed.k) == (2, 0, 0)
    for grade_file in runs.rglob("grade.json"):
        grade = grade_run(grade_file.parent)
        assert grade.status is RunStatus.GRADED
        if "bin" in grade_file.parts:
            assert grade.agent_end is not None and grade.agent_end.cause == "timeout" and not grade.passed


def test_a_harness_side_exclusion_in_one_condition_is_listed_and_warned(
    project: Path, tmp_path: Path
) -> None:
    """The adapter's program is `mytool`, on PATH only in bin: under the control the harness's own
    launch check refuses it before it starts, a harness-side cause (failed_to_run)."""
    runs = _matrix(tmp_path, project, "mytool --version")
    diagnostics = build_summary(runs).diagnostics
    (excluded,) = [d.message for d in diagnostics if d.kind == "excluded"]
    assert excluded.startswith(
        "cmd none/none/off: 2/2 runs excluded from its rates: failed_to_run: "
        "AdapterCannotStart: the adapter cannot start in the sandbox (exit 127): "
        "assay: mytool is not found in the sandbox"
    ), excluded
    (warning,) = [d for d in diagnostics if d.kind == "exclusions-differ"]
    assert warning.severity == "warning" and warning.message == (
        "cmd bin/none/off lost 0/2 runs to exclusions, its control none/none/off 2/2: "
        "the rates compare different denominators"
    )
    assert len(warning.evidence) == 2
