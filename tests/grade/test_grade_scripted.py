"""Must-show 2: each grade field on real runs of the scripted agent, designed to trigger it.

Every run here is made by the real runner (`run_trial`: workspace, tracing shim, snapshot
watcher, scripted adapter) and graded by `grade_run` from its preserved artifacts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from compiler.contract import (
    AgentSpec,
    Canaries,
    Cell,
    CheckSpec,
    Job,
    Limits,
    Options,
    Provisions,
    ScenarioJob,
    job_id,
)
from harness.artifacts.records import Grade, RunStatus
from harness.grade import grade_run
from harness.trial import run_trial
from tests.helpers import FIXTURES

FIXED = "def handler(x):\n    return x + 1\n"
BROKEN = "def handler(x:\n    return x +\n"
EXPECTATIONS: tuple[dict[str, Any], ...] = (
    {"id": "used-tool", "trace": {"command": "mytool"}},
    {
        "id": "checked-after-last-write",
        "trace": {"command": "mytool", "subcommand": "check", "after_last_write": True},
    },
    {"id": "no-triple-failure", "friction": {"repeated_failures": 2}},
    {"id": "explained", "transcript": {"contains": "because"}},
)


@pytest.fixture
def project_source() -> Path:
    """The `project` fixture copies tests/fixtures/grade/scripted: scenario `demo`, mytool, hidden tests."""
    return FIXTURES / "grade" / "scripted"


def _job(name: str, steps: list[dict[str, Any]]) -> Job:
    scenario = ScenarioJob(
        id="demo",
        root="scenarios/demo",
        family="demo",
        seed="scenarios/demo/seed",
        grader="scenarios/demo/grader",
        entry=("app/main.py",),
        writable=("app/**",),
        prompt="Make handler add one.\n",
        runtime_only=("the handler is fast enough in production",),
        checks=(
            CheckSpec(
                id="compiles",
                kind="command",
                authority="python",
                params={"run": "python -m py_compile app/main.py"},
            ),
            CheckSpec(
                id="tool-check",
                kind="command",
                authority="mytool",
                layer="mytool",
                params={"run": "sh mytool_check.sh check app/main.py"},
            ),
            CheckSpec(id="hidden-tests", kind="command", params={"run": "python hidden_test.py"}),
            CheckSpec(
                id="entry-stays-valid", kind="snapshot", params={"authority": "python", "max_regressions": 0}
            ),
        ),
        expectations=EXPECTATIONS,
    )
    cell = Cell(
        name="bin/none/off",
        levels={"tool": "bin", "knowledge": "none", "network": "off"},
        provisions=Provisions(
            path=("tools/bin",),
            trace=("mytool",),
            # the canary runs the traced tool too; it must not count as the agent's use
            canaries=Canaries(must_pass=("mytool --help",)),
        ),
    )
    agent = AgentSpec(id=name, adapter="scripted", args={"script_inline": {"seed": 1, "steps": steps}})
    return Job(
        id=job_id("m", cell.name, name, "demo", 1),
        hash="h-" + name,
        matrix="m",
        trial=1,
        scenario=scenario,
        cell=cell,
        agent=agent,
        limits=Limits(timeout_s=60),
        options=Options(isolation="none", infra_retries=0),
    )


def _run(project: Path, tmp_path: Path, name: str, steps: list[dict[str, Any]]) -> tuple[Path, Grade]:
    run_dir = tmp_path / "runs" / name
    record = run_trial(_job(name, steps), project=project, run_dir=run_dir)
    assert record.error is None, record.traceback
    return run_dir, grade_run(run_dir, project=project)


def _outcomes(grade: Grade) -> dict[str, str]:
    return {c.id: c.outcome for c in grade.checks}


def _expect(grade: Grade) -> dict[str, str]:
    return {e.id: e.outcome for e in grade.expectations}


def write(content: str) -> dict[str, Any]:
    return {"write": {"path": "app/main.py", "content": content}}


FORGED_GRADE = (
    "python3 -c \"import json, os; p = os.path.join(os.environ['BENCH_RUN_DIR'], 'grade.json'); "
    "json.dump({'schema_version': 1, 'status': 'graded', 'passed': True, 'usable': True}, open(p, 'w'))\""
)
PAUSE: dict[str, Any] = {"sleep": 0.3}  # longer than the snapshot watcher's poll interval


def test_agent_that_edits_the_hidden_tests(project: Path, tmp_path: Path) -> None:
    run_dir, g = _run(
        project,
        tmp_path,
        "cheater",
        [
            {"write": {"path": "hidden_test.py", "content": "print('all tests pass')\n"}},
            {"run": "python hidden_test.py"},
            {"run": FORGED_GRADE},  # and a verdict of its own, where the grader writes one
        ],
    )
    assert (
        run_dir / "workspace" / "hidden_test.py"
    ).read_text() == "print('all tests pass')\n"  # preserved as left
    assert g.status is RunStatus.GRADED and _outcomes(g)["hidden-tests"] == "fail" and not g.passed
    assert g.checks and g.grader_hash  # the grader's own verdict, not the one the agent wrote
    assert "handler(1) = 1" in next(d for d in g.diagnostics if d.startswith("hidden-tests"))
    assert g.unsafe_edits == ("hidden_test.py",)
    assert g.unverified_runtime_claims == ("the handler is fast enough in production",)
    assert "agent" in g.failed_layers


def test_agent_that_repeats_a_failing_command(project: Path, tmp_path: Path) -> None:
    check = {"run": "mytool check app/main.py"}
    _, g = _run(
        project,
        tmp_path,
        "repeater",
        [
            {"run": "mytool --help"},
            {"run": "mytool chek app/main.py"},
            check,
            check,
            check,
            PAUSE,
            write(FIXED),
            PAUSE,
            check,
            {"say": "Done, because the check passes now."},
        ],
    )
    f = g.friction
    assert (f.help_lookups, f.usage_errors, f.unknown_subcommands) == (1, 1, 1)
    assert f.repeated_failures == 3 and f.identical_repeats == 2 and f.retries_after_failure == 3
    use = g.tool_use
    assert use.invocations == 6 and use.failures == 4
    assert (
        use.by_subcommand["mytool check"].invocations == 4 and use.by_subcommand["mytool check"].failures == 3
    )
    assert use.by_subcommand["mytool check"].est_output_tokens >= 1
    assert _expect(g) == {
        "used-tool": "pass",
        "checked-after-last-write": "pass",
        "no-triple-failure": "fail",
        "explained": "pass",
    }
    assert g.passed and g.metrics["tool_calls"] == 6.0 and g.metrics["tool_failures"] == 4.0
    assert g.usage.present and g.usage.turns and g.usage.peak_context and g.usage.peak_context_share


def test_entry_goes_valid_then_invalid(project: Path, tmp_path: Path) -> None:
    _, g = _run(project, tmp_path, "flipflop", [PAUSE, write(FIXED), PAUSE, write(BROKEN), PAUSE])
    s = g.snapshots
    assert s.count == 2 and s.authority == "python"
    assert [v.valid for v in s.verdicts] == [True, False]
    assert s.first_valid == 0 and s.regressions == (1,) and s.final_valid is False
    assert _outcomes(g)["entry-stays-valid"] == "fail"
    assert g.usage.tokens_to_first_valid is not None and g.usage.tokens_to_first_valid < (g.usage.total or 0)


def test_agent_that_never_calls_the_tool(project: Path, tmp_path: Path) -> None:
    _, g = _run(project, tmp_path, "notool", [PAUSE, write(FIXED), PAUSE])
    assert g.tool_use.invocations == 0 and g.tool_use.by_subcommand == {}
    assert g.metrics["tool_calls"] == 0.0  # a real zero, not a missing measurement
    assert _expect(g)["used-tool"] == "fail" and _expect(g)["checked-after-last-write"] == "fail"
    assert _expect(g)["explained"] == "fail"  # a transcript exists, and says no "because"
    assert g.passed and g.usable and g.snapshots.first_valid == 0


def test_two_authorities_disagree(project: Path, tmp_path: Path) -> None:
    _, g = _run(
        project,
        tmp_path,
        "disagree",
        [PAUSE, write("def handler(x):\n    return x + 1  # TODO tidy\n"), PAUSE],
    )
    assert g.authorities["python"].status == "valid" and g.authorities["mytool"].status == "invalid"
    (d,) = g.disagreement
    assert d.direction == "python accepts, mytool rejects"
    assert "TODO" in d.rejects_diagnostics and "exited 0" in d.accepts_diagnostics
    assert g.failed_layers == ("mytool",) and _outcomes(g)["hidden-tests"] == "pass"
