"""Exclusions the agent causes, end to end: real trials, graded, reported.

By contract a run the harness had to stop (a timeout, a limit that ended the agent) is
`failed_to_run`, out of every rate — and that is the agent's doing, so an agent about to fail in
one condition can leave its denominator. The report's safety net, shown here on real runs: each
agent and condition lists its exclusions with their reasons, and a treatment that lost a different
share of its runs than its control is a warning.
"""

from __future__ import annotations

from pathlib import Path

from compiler.contract import Limits, Options
from harness.artifacts.run_tree import run_dir_for
from harness.grade import grade_run
from harness.report import build_summary
from harness.trial import run_trial
from tests.helpers import bin_cell, command_agent, make_job, none_cell


def test_an_agent_that_runs_out_its_time_in_one_condition_is_shown_leaving_its_denominator(
    project: Path, tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    agent = command_agent("if command -v mytool >/dev/null; then sleep 60; fi; exit 0")  # only in bin
    for cell in (none_cell(), bin_cell()):
        for trial in (1, 2):
            job = make_job(
                agent=agent,
                cell=cell,
                trial=trial,
                limits=Limits(timeout_s=2),
                options=Options(isolation="none", infra_retries=0),
            )
            run_dir = run_dir_for(job, runs)
            run_trial(job, project=project, run_dir=run_dir)
            grade_run(run_dir)
    diagnostics = build_summary(runs).diagnostics
    assert [d.message for d in diagnostics if d.kind == "excluded"] == [
        "cmd bin/none/off: 2/2 runs excluded from its rates: failed_to_run: agent timed out after 2 s (2)"
    ]
    (warning,) = [d for d in diagnostics if d.kind == "exclusions-differ"]
    assert warning.severity == "warning" and warning.message == (
        "cmd bin/none/off lost 2/2 runs to exclusions, its control none/none/off 0/2: "
        "the rates compare different denominators"
    )
    assert len(warning.evidence) == 2
