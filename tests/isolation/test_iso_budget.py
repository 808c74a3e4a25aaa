"""Budgets end to end: a scripted agent that would loop forever, its model (the scripted server) behind the
gateway in a real sandbox, is stopped by its token budget; run.json names the limit, the gateway log
shows the refusal, and the grader judges the work it left."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from compiler.contract import AgentSpec, CheckSpec, Limits, Options
from harness.artifacts.records import RunStatus, read_grade, read_run
from harness.gateway import read_log
from harness.grade import grade_run
from harness.modelserver import Script, ScriptedModelServer
from harness.trial import run_trial
from tests.helpers import FIXTURE, make_job
from tests.isolation.conftest import require

pytestmark = pytest.mark.isolation

FIX = {"edit": {"path": "app/main.py", "old": "import os\n", "new": ""}}


@pytest.fixture
def model(tmp_path: Path) -> Iterator[ScriptedModelServer]:
    script = Script.model_validate({"model": "scripted", "tools_required": False, "steps": []})
    with ScriptedModelServer(script, log_path=tmp_path / "model.jsonl") as server:
        yield server


def _trial(tmp_path: Path, model: ScriptedModelServer, steps: list[dict[str, Any]], limits: Limits) -> Path:
    require("bwrap")
    project = tmp_path / "project"
    shutil.copytree(FIXTURE, project, symlinks=True)
    agent = AgentSpec(
        id="looper",
        adapter="scripted",
        args={"base_url": model.url, "protocol": "anthropic", "script_inline": {"steps": steps}},
    )
    job = make_job(agent=agent, limits=limits, options=Options(isolation="bwrap", infra_retries=2))
    job = job.model_copy(
        update={
            "scenario": job.scenario.model_copy(
                update={
                    "checks": (
                        CheckSpec(
                            id="no-unused-import",
                            kind="absent",
                            params={"file": "app/main.py", "text": ["import os"]},
                        ),
                    )
                }
            )
        }
    )
    run_dir = tmp_path / "run"
    run_trial(job, project=project, run_dir=run_dir)
    grade_run(run_dir, project=project)
    return run_dir


def test_an_agent_that_loops_forever_is_stopped_by_its_token_budget(
    tmp_path: Path, model: ScriptedModelServer
) -> None:
    forever = {
        "repeat": {"times": "forever", "steps": [{"ask": {"text": "and again", "on_error": "continue"}}]}
    }
    run_dir = _trial(tmp_path, model, [FIX, forever], Limits(timeout_s=120, total_tokens=200))
    record, grade = read_run(run_dir), read_grade(run_dir)
    assert record.limits_hit == ("total_tokens",) and not record.timed_out, record
    assert record.exit_code is None and record.error is None  # ended by the harness, not a failure to run
    budget = record.extra["budget"]
    assert budget["enforced"] == "gateway" and budget["hit"] == ["total_tokens"] and budget["refused"] == 2
    assert budget["spent"]["total_tokens"] >= 200
    log = read_log(run_dir / "gateway.jsonl")
    refused = [r for r in log if not r.allowed]
    assert [r.limit for r in refused] == ["total_tokens", "total_tokens"]
    assert refused[0].status == 400 and "total_tokens budget" in refused[0].reason
    assert all(r.allowed for r in log[: len(log) - 2])  # every request before the budget was spent went out
    assert len(model.records()) == len(log) - 2
    # The work it did before looping is judged as it was left.
    assert grade is not None and grade.status is RunStatus.GRADED and grade.passed


def test_an_agent_that_stops_on_the_refusal_ends_by_itself(
    tmp_path: Path, model: ScriptedModelServer
) -> None:
    asks = [{"ask": "hello"}] * 5
    run_dir = _trial(tmp_path, model, asks, Limits(timeout_s=120, model_requests=2))
    record, grade = read_run(run_dir), read_grade(run_dir)
    assert record.exit_code == 1 and record.limits_hit == ("model_requests",)  # the agent's own exit
    assert record.extra["budget"]["refused"] == 1 and len(model.records()) == 2
    assert grade is not None and grade.status is RunStatus.GRADED and not grade.passed  # it did no work


def test_a_budget_without_a_gateway_is_recorded_as_not_enforced(tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(FIXTURE, project, symlinks=True)
    agent = AgentSpec(id="fixer", adapter="scripted", args={"script_inline": {"steps": [FIX]}})
    job = make_job(agent=agent, limits=Limits(timeout_s=60, total_tokens=10))
    record = run_trial(job, project=project, run_dir=tmp_path / "run")
    assert record.limits_hit == () and record.error is None
    assert record.extra["budget"]["enforced"] is None
    assert "not enforced" in record.extra["budget"]["note"]
