"""One launch for the canaries and the agent: the gate between them, with real processes."""

from __future__ import annotations

import json
from pathlib import Path

from compiler.contract import Canaries, CheckSpec, Options, Provisions
from harness.artifacts.records import read_grade, read_run
from harness.grade import grade_run
from harness.sandbox import proc
from harness.sandbox.gate import Gate
from harness.trial import run_trial
from tests.helpers import bin_cell, command_agent, make_job, none_cell

COMMAND = ["sh", "-c", 'read -r line; echo "got $line"; echo started > started']


def test_the_phase_output_is_kept_apart_and_the_command_starts_after_the_gate_opens(tmp_path: Path) -> None:
    seen: list[bytes] = []

    def opened(output: bytes) -> None:
        seen.append(output)
        assert not (tmp_path / "started").exists()  # the command does not exist yet

    gate = Gate(timeout_s=30, opened=opened)
    log = tmp_path / "log"
    done = proc.run(
        gate.wrap("echo phase-says-hi", COMMAND),
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin"},
        stdin=b"prompt\n",
        log=log,
        gate=gate,
    )
    assert done.exit_code == 0 and gate.at is not None
    assert seen == [b"phase-says-hi\n"] and gate.output == b"phase-says-hi\n"
    assert log.read_bytes() == b"got prompt\n"  # the phase's output is not the command's
    assert (tmp_path / "started").read_text() == "started\n"


def test_a_phase_that_never_ends_never_starts_the_command(tmp_path: Path) -> None:
    gate = Gate(timeout_s=0.5)
    done = proc.run(
        gate.wrap("echo stuck; sleep 30", COMMAND),
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin"},
        stdin=b"x\n",
        timeout_s=60,
        gate=gate,
    )
    assert done.timed_out and gate.at is None and gate.output.startswith(b"stuck\n")
    assert not (tmp_path / "started").exists()


def test_a_failed_phase_outcome_stops_the_command(tmp_path: Path) -> None:
    def opened(output: bytes) -> None:
        raise RuntimeError("refused")

    gate = Gate(timeout_s=30, opened=opened)
    done = proc.run(
        gate.wrap("true", COMMAND), cwd=tmp_path, env={"PATH": "/usr/bin:/bin"}, stdin=b"x\n", gate=gate
    )
    assert isinstance(gate.failed, RuntimeError) and done.exit_code == 125
    assert not (tmp_path / "started").exists()


def test_canaries_run_before_the_agent_in_its_launch_and_stay_out_of_its_log(
    project: Path, tmp_path: Path
) -> None:
    cell = bin_cell(canaries=Canaries(must_pass=("mytool --help",), absent=("nosuchtool",)))
    job = make_job(cell=cell, agent=command_agent("mytool check app/main.py; echo agent-ran"))
    record = run_trial(job, project=project, run_dir=tmp_path / "run")
    assert record.error is None and record.invalid is None, record.traceback
    assert [c.ok for c in record.canaries] == [True, True]
    assert "canaries" in record.extra["timings_s"]
    log = (tmp_path / "run" / "agent.log").read_text()
    assert "agent-ran" in log and "@@assay" not in log
    # the canary's `mytool --help` is kept aside: the trace is the agent's own tool use
    rows = [json.loads(line) for line in (tmp_path / "run" / "trace.jsonl").read_text().splitlines()]
    assert [r["argv"] for r in rows if "argv" in r] == [["mytool", "check", "app/main.py"]]
    aside = (tmp_path / "run" / ".assay" / "pre-agent-trace.jsonl").read_text()
    assert "--help" in aside


def test_a_failed_canary_marks_the_run_invalid_and_the_agent_still_runs(
    project: Path, tmp_path: Path
) -> None:
    cell = none_cell().model_copy(
        update={"provisions": Provisions(canaries=Canaries(must_fail=("true",), absent=("mytool",)))}
    )
    job = make_job(cell=cell, agent=command_agent("echo ran"))
    record = run_trial(job, project=project, run_dir=tmp_path / "run")
    assert record.invalid is not None and "must_fail 'true'" in record.invalid
    assert (tmp_path / "run" / "agent.log").read_text() == "ran\n"


def test_checks_that_only_read_grade_the_run_in_place(project: Path, tmp_path: Path) -> None:
    job = make_job(options=Options(isolation="none", infra_retries=0))
    scenario = job.scenario.model_copy(
        update={"checks": (CheckSpec(id="has-main", kind="file-exists", params={"path": "app/main.py"}),)}
    )
    run_dir = tmp_path / "run"
    run_trial(job.model_copy(update={"scenario": scenario}), project=project, run_dir=run_dir)
    grade = grade_run(run_dir)
    assert grade.passed and grade.details["check_isolation"] == "in-process"
    assert read_grade(run_dir) == grade and read_run(run_dir).error is None
