"""What the agent's side writes into its run directory is untrusted input: context.json that is
not a report, nested too deeply to parse, or not UTF-8 never crashes capture or the grader (a
crash made the run `failed_to_run`: a way out of every rate for an agent about to fail)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.artifacts.records import RunStatus
from harness.grade import grade_run
from harness.trial import run_trial
from tests.helpers import command_agent, make_job

CONTEXTS = {
    "not a list": ("echo '{\"loaded\": 5}'", "context.json has no 'loaded' list"),
    "too deep": ("python3 -c \"print('[' * 100000)\"", "context.json is not JSON"),
    "not utf-8": ('printf \'{"loaded": ["\\377"]}\'', "context.json is not JSON"),
    "too large": ("head -c 5000000 /dev/zero", "context.json is larger than"),
}


def test_a_huge_context_report_keeps_its_first_items(project: Path, tmp_path: Path) -> None:
    """1,500 items of 2,000 characters each: the grade keeps 200 of 500 characters and says so."""
    write = "python3 -c \"import json; print(json.dumps({'loaded': ['/x' + 'a' * 2000] * 1500}))\""
    run_dir = tmp_path / "run"
    run_trial(
        make_job(agent=command_agent(f'{write} > "$BENCH_CONTEXT"; exit 0')), project=project, run_dir=run_dir
    )
    grade = grade_run(run_dir)
    assert grade.status is RunStatus.GRADED and grade.invalid is None
    assert len(grade.context.loaded) == 200 and all(len(i) == 500 for i in grade.context.loaded)
    assert grade.context.error == "context.json lists 1,500 items: the first 200 are kept"
    assert (run_dir / "grade.json").stat().st_size < 1_000_000


@pytest.mark.parametrize("case", sorted(CONTEXTS))
def test_an_unreadable_context_report_is_recorded_never_a_crash(
    project: Path, tmp_path: Path, case: str
) -> None:
    write, why = CONTEXTS[case]
    agent = command_agent(f'{write} > "$BENCH_CONTEXT"; exit 0')
    run_dir = tmp_path / "run"
    record = run_trial(make_job(agent=agent), project=project, run_dir=run_dir)
    assert record.error is None, record.traceback
    assert record.invalid is None  # the agent writes context.json: advisory, never an exclusion
    grade = grade_run(run_dir)
    assert grade.status is RunStatus.GRADED and grade.invalid is None
    assert grade.context.present and (grade.context.error or "").startswith(why)
