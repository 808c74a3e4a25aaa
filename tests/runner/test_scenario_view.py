"""A scenario's own view in a trial and its grade: the workspace at its workdir, a writable mount
the checks judge in its final state, a hidden mount only the checks see, the scenario's variables;
and "cannot run here" before any trial when the interpreter it needs is missing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from compiler.contract import (
    AgentSpec,
    Cell,
    CheckSpec,
    Environment,
    Job,
    Limits,
    Options,
    ScenarioJob,
    ScenarioMount,
    job_id,
)
from harness.grade import grade_run
from harness.sandbox.isolation import select
from harness.sandbox.scenario import prepare
from harness.sandbox.scenario_env import CannotRunHere
from harness.trial import run_trial
from tests.helpers import FIXTURES, assay

pytestmark = pytest.mark.isolation

AGENT = (
    "pwd > where.txt; echo agent-was-here >> /data/log.txt; "
    "test -e /tests/test_x.py && echo visible > peek.txt || echo hidden > peek.txt; "
    'echo "$COLOUR" > colour.txt'
)


def _scenario(root: Path) -> ScenarioJob:
    base = root / "scenarios" / "s"
    for rel, text in {
        "seed/app.txt": "seed\n",
        "reference/where.txt": "/work\n",
        "data/log.txt": "start\n",
        "tests/test_x.py": "def test_x():\n    pass\n",
    }.items():
        (base / rel).parent.mkdir(parents=True, exist_ok=True)
        (base / rel).write_text(text, encoding="utf-8")
    check = (
        'test "$(cat where.txt)" = /work && grep -q agent-was-here /data/log.txt && test -f /tests/test_x.py'
        ' && test "$(cat peek.txt)" = hidden && test "$(cat colour.txt)" = teal'
    )
    return ScenarioJob(
        id="s",
        root="scenarios/s",
        family="f",
        seed="scenarios/s/seed",
        reference="scenarios/s/reference",
        prompt="p",
        checks=(CheckSpec(id="view", kind="command", params={"run": check, "exit": 0}),),
        workdir="/work",
        mounts=(
            ScenarioMount(path="/data", source="scenarios/s/data", writable=True),
            ScenarioMount(path="/tests", source="scenarios/s/tests", hidden=True),
        ),
        env={"COLOUR": "teal"},
    )


def _job(scenario: ScenarioJob, agent: AgentSpec) -> Job:
    cell = Cell(name="none", levels={"tool": "none"}, control=True)
    return Job(
        id=job_id("m", "none", agent.id, scenario.id, 1),
        hash="h",
        matrix="m",
        trial=1,
        scenario=scenario,
        cell=cell,
        agent=agent,
        limits=Limits(timeout_s=60, cpus=1),
        options=Options(isolation="auto"),
    )


def test_the_agent_and_the_checks_see_the_same_paths(tmp_path: Path) -> None:
    if select("auto").name == "none":
        pytest.skip("needs the bwrap or unshare isolation (a workdir and mounts are bind mounts)")
    project = tmp_path / "project"
    scenario = _scenario(project)
    run_dir = tmp_path / "run"
    record = run_trial(
        _job(scenario, AgentSpec(id="cmd", adapter="command", command=AGENT)),
        project=project,
        run_dir=run_dir,
    )
    assert record.error is None and record.exit_code == 0, record.error
    assert (run_dir / "mounts" / "data" / "log.txt").read_text() == "start\nagent-was-here\n"
    assert (project / "scenarios" / "s" / "data" / "log.txt").read_text() == "start\n"  # a per-trial copy
    grade = grade_run(run_dir, project=project)
    assert (grade.status, grade.passed) == ("graded", True), grade.checks


def test_a_missing_interpreter_cannot_run_here(tmp_path: Path) -> None:
    scenario = ScenarioJob(
        id="old", root="s", family="f", seed="s", prompt="p", checks=(), environment=Environment(python="3.2")
    )
    with pytest.raises(CannotRunHere) as info:
        prepare([(scenario, "bwrap")], tmp_path)
    assert "old: cannot run here: python 3.2 is not installed on this machine" in str(info.value)
    assert not (tmp_path / ".cache").exists() or not any((tmp_path / ".cache").rglob("ready.json"))
    json.dumps(str(info.value))  # a plain message, printed as is by the CLI


def test_a_mount_that_fails_is_a_failed_start_not_the_agents_failure(tmp_path: Path) -> None:
    """The sandbox cannot mount what the scenario shows (its folder went after compiling): the run
    failed to run, with bwrap's own words, and is never graded as the agent's failure."""
    if select("auto").name == "none":
        pytest.skip("needs the bwrap or unshare isolation (a workdir and mounts are bind mounts)")
    project = tmp_path / "project"
    scenario = _scenario(project)
    read_only = scenario.model_copy(
        update={"mounts": (ScenarioMount(path="/data", source="scenarios/s/data"), scenario.mounts[1])}
    )
    shutil.rmtree(project / "scenarios" / "s" / "data")
    run_dir = tmp_path / "run"
    record = run_trial(
        _job(read_only, AgentSpec(id="cmd", adapter="command", command=AGENT)),
        project=project,
        run_dir=run_dir,
    )
    assert record.error is not None and "the adapter cannot start in the sandbox" in record.error
    assert "scenarios/s/data" in record.error  # the cause: the folder it could not mount
    grade = grade_run(run_dir, project=project)
    assert (grade.status, grade.passed) == ("failed_to_run", False)


def test_assay_stops_before_any_trial_when_the_interpreter_is_missing(tmp_path: Path) -> None:
    """`assay matrix` and `assay validate` say "cannot run here" and run nothing."""
    root = tmp_path / "project"
    shutil.copytree(FIXTURES / "seed000", root)
    old = root / "scenarios" / "old"
    shutil.copytree(root / "scenarios" / "greet", old)
    (old / "scenario.json").unlink()
    shutil.rmtree(old / "negative")
    (old / "scenario.yaml").write_text(
        "kind: scenario\nid: old\nenvironment: { python: '3.2' }\n"
        "checks: [{ id: out, kind: file-exists, path: greet.py }]\n",
        encoding="utf-8",
    )
    compiled = assay("--project", root, "compile")
    assert compiled.returncode == 0, compiled.stderr
    for args in (("matrix", "seed000"), ("validate",)):
        done = assay("--project", root, *args)
        assert done.returncode == 2, done.stderr
        assert "cannot run here, before any trial:" in done.stderr
        assert "old: cannot run here: python 3.2 is not installed on this machine" in done.stderr
    assert not (root / "runs").exists() or not any((root / "runs").rglob("run.json"))
