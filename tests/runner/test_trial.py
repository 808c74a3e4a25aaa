"""run_trial end to end with real processes, git and files."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from compiler.contract import AgentSpec
from harness.artifacts.records import read_run
from harness.trial import run_trial
from tests.helpers import bin_cell, command_agent, make_job, none_cell


def test_noop_trial_writes_a_complete_run_dir(project: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    record = run_trial(make_job(), project=project, run_dir=run_dir)
    assert record.error is None, record.traceback
    assert record.exit_code == 0
    assert record.invalid is None
    assert read_run(run_dir) == record
    assert (run_dir / "workspace" / "app" / "main.py").read_text().startswith("import os")
    assert (run_dir / "diff.patch").read_bytes() == b""
    assert json.loads((run_dir / "job.json").read_text())["id"] == record.job_id
    assert (run_dir / "agent.log").exists()


def test_scripted_agent_edits_and_tool_is_traced(project: Path, tmp_path: Path) -> None:
    agent = AgentSpec(id="fixer", adapter="scripted", args={"script": "scripts/fixer.yaml", "skill": 1.0})
    record = run_trial(make_job(agent=agent, cell=bin_cell()), project=project, run_dir=tmp_path / "run")
    assert record.error is None, record.traceback
    assert record.unsafe_edits == ()
    patch = (tmp_path / "run" / "diff.patch").read_text()
    assert "-import os" in patch
    trace = [json.loads(line) for line in (tmp_path / "run" / "trace.jsonl").read_text().splitlines()]
    assert [r["argv"] for r in trace] == [["mytool", "check", "app/main.py"]]
    assert trace[0]["exit"] == 0 and trace[0]["output_bytes"] > 0
    assert record.metrics.turns and record.metrics.turns >= 3
    snaps = (tmp_path / "run" / "snapshots" / "index.jsonl").read_text().splitlines()
    assert len(snaps) == 1 and json.loads(snaps[0])["file"] == "app/main.py"
    answer = json.loads((tmp_path / "run" / "workspace" / "answer.json").read_text())
    assert answer == {"done": True}


def test_absent_tool_not_found_and_canary_passes(project: Path, tmp_path: Path) -> None:
    agent = command_agent("command -v mytool > found.txt; echo rc=$? >> found.txt; exit 0")
    record = run_trial(
        make_job(agent=agent, cell=none_cell(), writable=("**",)), project=project, run_dir=tmp_path / "run"
    )
    assert record.invalid is None
    assert [(c.kind, c.command, c.ok) for c in record.canaries] == [("absent", "mytool", True)]
    assert (tmp_path / "run" / "workspace" / "found.txt").read_text().strip() in ("rc=1", "rc=127")
    assert not (tmp_path / "run" / "trace.jsonl").exists()


def test_canary_failure_marks_run_invalid(project: Path, tmp_path: Path) -> None:
    cell = bin_cell().model_copy(
        update={
            "provisions": bin_cell().provisions.model_copy(
                update={"canaries": none_cell().provisions.canaries}
            )
        }
    )
    record = run_trial(make_job(cell=cell), project=project, run_dir=tmp_path / "run")
    assert record.invalid is not None and "mytool" in record.invalid


def test_write_outside_writable_is_an_unsafe_edit(project: Path, tmp_path: Path) -> None:
    agent = command_agent("echo x >> README.md; echo y >> app/main.py; echo '{}' > answer.json")
    record = run_trial(make_job(agent=agent), project=project, run_dir=tmp_path / "run")
    assert record.unsafe_edits == ("README.md",)


def test_other_failures_are_data(project: Path, tmp_path: Path) -> None:
    record = run_trial(make_job(agent=command_agent("exit 3")), project=project, run_dir=tmp_path / "a")
    assert record.exit_code == 3 and record.error is None
    missing = make_job(agent=AgentSpec(id="x", adapter="scripted", args={"script": "nope.yaml"}))
    record = run_trial(missing, project=project, run_dir=tmp_path / "b")
    assert record.error is not None and "nope.yaml" in record.error
    assert read_run(tmp_path / "b").error == record.error


def test_hung_agent_is_killed_at_its_timeout_with_its_grandchild(project: Path, tmp_path: Path) -> None:
    from compiler.contract import Limits
    from harness.sandbox import proc
    from tests.runner.test_proc import _wait_gone

    if not proc.pidns_available():
        import pytest

        pytest.skip("pid namespaces unavailable: tree kill not guaranteed here")
    marker = f"{os.getpid()}{time.monotonic_ns() % 10_000}.25"
    agent = command_agent(f"(setsid sh -c 'exec sleep {marker}' &); exec sleep {marker}1")
    job = make_job(agent=agent, limits=Limits(timeout_s=1.0))
    record = run_trial(job, project=project, run_dir=tmp_path / "run")
    assert record.timed_out and record.limits_hit == ("timeout",)
    assert record.exit_code is None and record.error is None  # the agent's doing, not the harness's
    assert record.agent_end is not None and record.agent_end.cause == "timeout"
    assert "timed out after 1 s" in record.agent_end.detail
    assert _wait_gone(marker) == []


def test_exit_75_is_retried_and_recorded(project: Path, tmp_path: Path) -> None:
    from compiler.contract import Options

    counter = tmp_path / "attempts"
    agent = command_agent(f"echo attempt >> {counter}; echo junk >> app/main.py; exit 75")
    job = make_job(agent=agent, options=Options(isolation="none", infra_retries=2))
    record = run_trial(job, project=project, run_dir=tmp_path / "run")
    assert counter.read_text().count("attempt") == 3
    assert record.infra_retries == 2 and record.exit_code == 75
    # no model gateway ran (isolation none): nothing on the harness's side shows a provider failure
    assert record.error is None and record.agent_end is not None
    assert record.agent_end.cause == "claimed_infra" and "exited 75" in record.agent_end.detail
    assert "after 2 retries" in record.agent_end.detail
    # each retry starts from the baseline: only the last attempt's line is in the workspace
    assert (tmp_path / "run" / "workspace" / "app" / "main.py").read_text().count("junk") == 1
    assert len(list((tmp_path / "run" / "retries").iterdir())) == 2


def test_an_agents_own_not_found_line_and_exit_127_is_its_own_exit(project: Path, tmp_path: Path) -> None:
    """The shell's "not found" words are text anyone can print: the harness's launch check, before the
    agent existed, found its program; so the exit is the agent's, graded (it had been failed_to_run)."""
    from harness.artifacts.records import RunStatus
    from harness.grade import grade_run

    agent = command_agent("sh -c \"echo 'sh: 1: exec: sh: not found' >&2; exit 127\"")
    record = run_trial(make_job(agent=agent), project=project, run_dir=tmp_path / "run")
    assert record.error is None and record.exit_code == 127
    assert record.agent_end is not None and (record.agent_end.cause, record.agent_end.detail) == (
        "exit",
        "the agent exited 127",
    )
    assert grade_run(tmp_path / "run").status is RunStatus.GRADED


def test_a_missing_api_key_is_the_harness_side_never_an_exit_75_of_the_agent(
    project: Path, tmp_path: Path
) -> None:
    """An adapter without its API key exits 75 before asking anything: the run must not become the
    agent's claimed infrastructure failure (graded) — the machine lacks the key (failed_to_run)."""
    from compiler.contract import AgentSpec
    from harness.artifacts.records import RunStatus
    from harness.grade import grade_run

    agent = AgentSpec(
        id="cmd", adapter="command", command="exit 75", args={"api_key_env": "ASSAY_TEST_UNSET_KEY"}
    )
    record = run_trial(make_job(agent=agent), project=project, run_dir=tmp_path / "run")
    assert (
        record.error is not None
        and "its API key variable ASSAY_TEST_UNSET_KEY is not set here" in record.error
    )
    assert record.agent_end is None and grade_run(tmp_path / "run").status is RunStatus.FAILED_TO_RUN


def test_exit_75_then_success(project: Path, tmp_path: Path) -> None:
    counter = tmp_path / "n"
    agent = command_agent(f"echo x >> {counter}; [ $(wc -l < {counter}) -ge 2 ] || exit 75; exit 0")
    record = run_trial(make_job(agent=agent), project=project, run_dir=tmp_path / "run")
    assert record.infra_retries == 1 and record.exit_code == 0 and record.error is None


def test_knowledge_folder_cannot_be_written_through(project: Path, tmp_path: Path) -> None:
    from compiler.contract import Provisions

    cell = none_cell().model_copy(update={"provisions": Provisions(links={"wiki": "wiki"})})
    agent = command_agent(
        "cat wiki/guide.md > seen.txt; echo hacked > wiki/guide.md; echo new > wiki/new.md; rm -f wiki/guide.md; "
        "ls wiki >> seen.txt; exit 0"
    )
    record = run_trial(
        make_job(agent=agent, cell=cell, writable=("**",)), project=project, run_dir=tmp_path / "run"
    )
    assert record.error is None, record.traceback
    assert (project / "wiki" / "guide.md").read_text() == "# Wiki\nknowledge\n"
    assert not (project / "wiki" / "new.md").exists()
    seen = (tmp_path / "run" / "workspace" / "seen.txt").read_text()
    assert "knowledge" in seen and "guide.md" in seen
    assert record.unsafe_edits == ()
    assert "wiki" not in (tmp_path / "run" / "diff.patch").read_text()


def test_canaries_of_every_kind_in_one_launch(project: Path, tmp_path: Path) -> None:
    from compiler.contract import Canaries

    canaries = Canaries(
        absent=("mytool", "sh"),
        must_fail=("exit 3", "true"),
        must_pass=("mytool --version", "echo hi; exit 4"),
    )
    cell = bin_cell(canaries=canaries)
    record = run_trial(make_job(cell=cell), project=project, run_dir=tmp_path / "run")
    got = {(c.kind, c.command): c.ok for c in record.canaries}
    assert got == {
        ("absent", "mytool"): False,
        ("absent", "sh"): False,
        ("must_fail", "exit 3"): True,
        ("must_fail", "true"): False,
        ("must_pass", "mytool --version"): True,
        ("must_pass", "echo hi; exit 4"): False,
    }
    detail = {c.command: c.detail for c in record.canaries}
    assert "/.assay/bin/mytool" in detail["mytool"]
    assert detail["echo hi; exit 4"] == "exit 4: hi"
    assert record.invalid and "'true'" in record.invalid


def test_oracle_applies_the_reference(project: Path, tmp_path: Path) -> None:
    from compiler.contract import Options

    for isolation in ("none", "auto"):
        job = make_job(agent=AgentSpec(id="oracle", adapter="oracle"), options=Options(isolation=isolation))
        record = run_trial(job, project=project, run_dir=tmp_path / isolation)
        assert record.exit_code == 0, (tmp_path / isolation / "agent.log").read_text()
        main = (tmp_path / isolation / "workspace" / "app" / "main.py").read_text()
        assert "import os" not in main and "def handler" in main


def test_multi_step_evidence_and_fresh_repo(project: Path, tmp_path: Path) -> None:
    from compiler.contract import Step

    (project / "evidence.txt").write_text("clue\n")
    agent = command_agent(
        "echo step-$(cat app/main.py | wc -l) >> $BENCH_STATE_DIR/log; "
        "[ -f clue.txt ] && cat clue.txt >> $BENCH_STATE_DIR/log; echo more >> app/main.py"
    )
    job = make_job(agent=agent, cell=none_cell(state_dir=True))
    steps = (
        Step(name="one", prompt="first", evidence={"clue.txt": "evidence.txt"}),
        Step(name="two", prompt="second"),
        Step(name="three", prompt="third", fresh_repo=True),
    )
    job = job.model_copy(update={"scenario": job.scenario.model_copy(update={"steps": steps})})
    record = run_trial(job, project=project, run_dir=tmp_path / "run")
    assert record.error is None, record.traceback
    assert [s.name for s in record.steps] == ["one", "two", "three"]
    log = (tmp_path / "run" / "state" / "log").read_text().split()
    # the evidence is there in step one only; step three starts from the baseline again
    assert log == ["step-5", "clue", "step-6", "step-5"]
    assert not (tmp_path / "run" / "workspace" / "clue.txt").exists()
    assert (tmp_path / "run" / "steps" / "step-01" / "diff.patch").read_text().count("+more") == 1
    assert (tmp_path / "run" / "workspace" / "app" / "main.py").read_text().count("more") == 1


def test_instruction_files_above_an_unconfined_workspace_are_recorded(project: Path, tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("host instructions\n")
    record = run_trial(make_job(), project=project, run_dir=tmp_path / "runs" / "run")
    assert str(tmp_path / "AGENTS.md") in record.extra["host_instruction_files_visible"]
    home = tmp_path / "runs" / "run" / "home"
    assert home.is_dir() and not any(home.iterdir())


def test_network_canaries_prove_against_a_loopback_listener_of_the_harness(
    project: Path, tmp_path: Path
) -> None:
    from compiler.contract import Canaries, Options

    def canaries_of(network: bool, canary: str, name: str) -> tuple[tuple[str, str, bool, str], ...]:
        cell = bin_cell(network=network, canaries=Canaries(network=canary))  # type: ignore[arg-type]
        job = make_job(cell=cell, options=Options(isolation="none"))
        record = run_trial(job, project=project, run_dir=tmp_path / name)
        return tuple((c.kind, c.command, c.ok, c.detail) for c in record.canaries)

    # network off: the command's own network namespace; nothing reaches the host's loopback.
    ((kind, command, ok, detail),) = canaries_of(False, "off", "off")
    assert (kind, command, ok) == ("network", "network: off", True), detail
    # network on without a sandbox: the listener answers, so `on` holds and `off` fails (counted).
    assert canaries_of(True, "on", "on")[0][2] is True
    ((_, _, ok, detail),) = canaries_of(True, "off", "leaky")
    assert not ok and "connection(s) from the sandbox reached the host's loopback" in detail
