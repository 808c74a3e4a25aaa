"""The example suite's memory scenarios, run for real: the handoff pays off only through the state.

The compiled demo matrix's own jobs (in memory, no generated/ needed) run through the real
runner with the scripted agent and are graded by the real grader.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compiler.contract import Job
from compiler.emit import job_files
from compiler.pipeline import build
from harness.artifacts.records import RunStatus
from harness.grade import grade_run
from harness.trial import run_trial

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def all_jobs() -> dict[tuple[str, str, str, str], Job]:
    found: dict[tuple[str, str, str, str], Job] = {}
    for jf in job_files(build(REPO)).values():
        if jf.version is not None:
            continue
        for job in jf.jobs():
            if job.trial == 1:
                found[(job.matrix, job.scenario.id, job.cell.name, job.agent.id)] = job
    return found


@pytest.fixture(scope="module")
def demo_jobs(all_jobs: dict[tuple[str, str, str, str], Job]) -> dict[tuple[str, str, str], Job]:
    return {k[1:]: job for k, job in all_jobs.items() if k[0] == "demo"}


def _run(job: Job, tmp_path: Path, label: str) -> tuple[Path, bool]:
    run = tmp_path / label
    record = run_trial(job, project=REPO, run_dir=run)
    assert record.error is None, record.traceback or record.error
    grade = grade_run(run, project=REPO)
    assert grade.status == RunStatus.GRADED, grade
    return run, grade.passed


def test_handoff_passes_only_when_the_state_carried_the_diagnosis(demo_jobs: dict, tmp_path: Path) -> None:
    key = ("handoff-restart-logouts", "", "scripted-good")
    treated, passed = _run(demo_jobs[(key[0], "none/memory/off", key[2])], tmp_path, "memory")
    assert passed
    assert "restart-logouts" in (treated / "state" / "memo.jsonl").read_text()
    control, control_passed = _run(demo_jobs[(key[0], "none/none/off", key[2])], tmp_path, "control")
    assert not control_passed
    # the control recorded its diagnosis too, in a notes file the fresh tree of session B wiped
    assert "+Root cause" in (control / "steps" / "step-01" / "diff.patch").read_text()
    assert not (control / "workspace" / "NOTES.md").exists()
    for run in (treated, control):
        assert [s["name"] for s in json.loads((run / "run.json").read_text())["steps"]] == ["diagnose", "fix"]
        assert not list(run.rglob("incident.log"))
        for patch in run.rglob("diff.patch"):
            assert "auth-7f3" not in patch.read_text(), patch


def test_instruction_trap_needs_the_seeded_memory(demo_jobs: dict, tmp_path: Path) -> None:
    sid = "trap-cookie-samesite"
    treated, passed = _run(demo_jobs[(sid, "none/memory/off", "scripted-good")], tmp_path, "memory")
    assert passed and "auth-cookies-samesite-lax" in (treated / "state" / "memo.jsonl").read_text()
    control, control_passed = _run(demo_jobs[(sid, "none/none/off", "scripted-good")], tmp_path, "control")
    assert not control_passed and not (control / "state" / "memo.jsonl").exists()
    assert '"samesite": "Strict"' in (control / "workspace" / "webapp" / "cookies.py").read_text()


def test_invisible_infrastructure_needs_the_seeded_memory(all_jobs: dict, tmp_path: Path) -> None:
    sid = "stale-assets-cdn"
    treated, passed = _run(all_jobs[("default", sid, "none/memory/off", "scripted-good")], tmp_path, "memory")
    assert passed and "cdn-query-string-blind" in (treated / "state" / "memo.jsonl").read_text()
    control, control_passed = _run(
        all_jobs[("default", sid, "none/none/off", "scripted-good")], tmp_path, "control"
    )
    assert not control_passed and "?v=" in (control / "workspace" / "shop" / "web.py").read_text()
