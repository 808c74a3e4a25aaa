"""A matrix in rounds through the real CLI: `--until decided` stops a decided comparison and records what
it saved; a matrix budget stops scheduling before the projected spend passes it; a rerun resumes."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from compiler.contract import AgentSpec, CheckSpec, Job
from harness.artifacts.rounds import Verdict, read_rounds
from harness.artifacts.run_tree import run_dir_for
from harness.batch.rounds import comparisons, needed
from tests.helpers import assay, bin_cell, fix_scenario, make_job, none_cell

# The tool on PATH is all it takes: with it the agent fixes the file, without it it does nothing.
SCRIPT = {
    "steps": [
        {"when": {"on_path": "mytool"}, "edit": {"path": "app/main.py", "old": "import os\n", "new": ""}}
    ]
}
AGENT = AgentSpec(id="fixer", adapter="scripted", args={"script_inline": SCRIPT})


FIXED = CheckSpec(id="fixed", kind="absent", params={"file": "app/main.py", "text": ["import os"]})


def _jobs(folder: Path, trials: int) -> list[Job]:
    folder.mkdir(parents=True, exist_ok=True)
    jobs = []
    for cell in (none_cell(), bin_cell()):
        for t in range(1, trials + 1):
            job = make_job(fix_scenario(checks=(FIXED,)), agent=AGENT, cell=cell, trial=t)
            (folder / f"{cell.name.replace('/', '-')}-t{t:02d}.json").write_text(job.model_dump_json())
            jobs.append(job)
    return jobs


def _matrix(project: Path, tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    jobs, runs = tmp_path / "jobs", tmp_path / "runs"
    return assay(
        "--project", project, "matrix", "--job-file", jobs, "--runs", runs, "--parallel", "2", *extra
    )


@pytest.mark.slow
def test_until_decided_stops_the_comparison_once_decided(project: Path, tmp_path: Path) -> None:
    jobs = _jobs(tmp_path / "jobs", trials=10)
    # Resumable: four rounds first (too few to decide anything), then the rest.
    first = _matrix(project, tmp_path, "--until", "decided", "--trials", "4")
    assert first.returncode == 0, first.stderr
    early = read_rounds(tmp_path / "runs" / "test")
    assert early is not None and early.rounds_run == 4 and early.skipped == []
    assert all(v.status == "open" for v in early.verdicts)
    done = _matrix(project, tmp_path, "--until", "decided")
    assert done.returncode == 0, done.stderr
    record = read_rounds(tmp_path / "runs" / "test")
    assert record is not None and record.finished and record.until == "decided" and record.method
    (verdict,) = record.verdicts  # one scenario: no pooled test, its own e-value decides
    assert (verdict.scenario, verdict.status, verdict.round, verdict.pairs) == ("fix", "effect", 7, 7)
    assert verdict.e_value is not None and verdict.e_value >= 20
    assert (record.rounds_run, record.planned, record.ran) == (7, 20, 14)
    assert sorted(s.job for s in record.skipped) == sorted(j.id for j in jobs if j.trial > 7)
    assert {s.why for s in record.skipped} == {"decided"}
    assert record.spend.saved_tokens is not None and record.spend.saved_tokens > 0
    for job in jobs:
        assert run_dir_for(job, tmp_path / "runs").exists() == (job.trial <= 7), job.id
    assert "decided at round 7" in done.stderr and "6 (decided)" in done.stderr


@pytest.mark.slow
def test_a_matrix_budget_stops_scheduling_before_it_is_passed(project: Path, tmp_path: Path) -> None:
    _jobs(tmp_path / "jobs", trials=6)
    probe = _matrix(project, tmp_path, "--trials", "1", "--budget-tokens", "1000000000")
    assert probe.returncode == 0, probe.stderr
    one_round = read_rounds(tmp_path / "runs" / "test")
    assert one_round is not None and one_round.budget is not None and one_round.budget.reason is None
    per_round = one_round.spend.tokens
    budget = int(per_round * 2.5)  # rounds 1 and 2 fit, round 3 would pass it
    done = _matrix(project, tmp_path, "--budget-tokens", str(budget))
    assert done.returncode == 0, done.stderr
    record = read_rounds(tmp_path / "runs" / "test")
    assert record is not None and record.budget is not None and record.until == "planned"
    assert record.budget.stopped_at_round == 3 and "past the budget" in (record.budget.reason or "")
    assert record.rounds_run == 2 and record.ran == 4
    assert len(record.skipped) == 8 and {s.why for s in record.skipped} == {"budget"}
    assert record.spend.tokens <= budget
    assert "scheduling stopped" in done.stderr


def test_what_a_round_still_needs() -> None:
    wiki = none_cell().model_copy(update={"name": "none/wiki/off", "control": False})
    good, oracle = AGENT, AgentSpec(id="oracle", adapter="oracle", sanity="pass")
    jobs = [make_job(agent=a, cell=c) for a in (good, oracle) for c in (none_cell(), bin_cell(), wiki)]
    by = {(j.agent.id, j.cell.name): j for j in jobs}
    comps = comparisons(jobs)
    assert comps == {
        (None, "fixer", "bin/none/off"): ("none/none/off", ("fix",)),
        (None, "fixer", "none/wiki/off"): ("none/none/off", ("fix",)),
    }  # the sanity agent is in no comparison

    def verdict(cell: str, status: str, scenario: str | None = "fix") -> Verdict:
        return Verdict(
            version=None, agent="fixer", condition=cell, control="none/none/off", scenario=scenario,
            status=status, round=3 if status != "open" else None, pairs=3, value=1.0, low=-1.0, high=1.0,
        )  # fmt: skip

    one = [verdict("bin/none/off", "effect"), verdict("none/wiki/off", "open")]
    assert not needed(by[("fixer", "bin/none/off")], comps, one)
    assert needed(by[("fixer", "none/none/off")], comps, one)  # the wiki comparison still needs its control
    assert needed(by[("oracle", "none/none/off")], comps, one)  # in no comparison: runs while any is open
    both = [verdict("bin/none/off", "effect"), verdict("none/wiki/off", "below", scenario=None)]
    assert not any(needed(j, comps, both) for j in jobs)
    assert all(needed(j, {}, both) for j in jobs)  # nothing to decide: every trial runs
