"""Multi-session runs and treatment state, end to end: real processes, real files, real grading."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from compiler.contract import CheckSpec, Job, Step
from harness.artifacts.records import RunStatus
from harness.grade import grade_run
from harness.trial import run_trial
from harness.trial.session import Either
from tests.helpers import command_agent, make_job, none_cell

LOG = "2026-11-30T03:12Z recycle instance-7\n2026-11-30T03:14Z 401 unknown refresh token\n"


def _with(job: Job, steps: tuple[Step, ...], checks: tuple[CheckSpec, ...] = (), **scenario: object) -> Job:
    update: dict[str, object] = {"steps": steps, **scenario}
    if checks:
        update["checks"] = job.scenario.checks + checks
    return job.model_copy(update={"scenario": job.scenario.model_copy(update=update)})


def _handoff(project: Path, *, state_dir: bool) -> Job:
    """Session A reads the evidence and notes it in the state dir; session B (fresh tree) reads the note."""
    (project / "incident.log").write_text(LOG)
    agent = command_agent(
        'if grep -q diagnose; then cat incident.log > /dev/null && grep -c 401 incident.log > "$BENCH_STATE_DIR/note"; '
        'echo "# looked" >> app/main.py; echo scratch > app/notes.txt; '
        'else cat "$BENCH_STATE_DIR/note" > app/fix.txt 2>/dev/null || echo blind > app/fix.txt; fi'
    )
    checks = (
        CheckSpec(id="no-evidence", kind="file-exists", params={"path": "incident.log", "exists": False}),
        CheckSpec(id="fixed", kind="contains", params={"file": "app/fix.txt", "text": ["1"]}),
    )
    steps = (
        Step(name="diagnose", prompt="diagnose the logouts\n", evidence={"incident.log": "incident.log"}),
        Step(name="fix", prompt="land the fix\n", fresh_repo=True),
    )
    return _with(make_job(agent=agent, cell=none_cell(state_dir=state_dir), writable=("**",)), steps, checks)


def test_evidence_never_reaches_a_diff_the_final_tree_or_the_grader(project: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    record = run_trial(_handoff(project, state_dir=True), project=project, run_dir=run)
    assert record.error is None, record.traceback
    assert [s.name for s in record.steps] == ["diagnose", "fix"]
    # session A really read it (the note counts its 401 line), yet it is nowhere in the run's files
    assert (run / "state" / "note").read_text().strip() == "1"
    for patch in (run / "diff.patch", run / "steps" / "step-01" / "diff.patch"):
        text = patch.read_text()
        assert "incident.log" not in text and "unknown refresh token" not in text
    assert "+# looked" in (run / "steps" / "step-01" / "diff.patch").read_text()
    assert not list(run.glob("workspace/**/incident.log"))
    assert not any(
        "unknown refresh token" in p.read_text(errors="replace")
        for p in run.rglob("snapshots/**/*")
        if p.is_file()
    )
    # fresh_repo: session A's edits are gone from the final tree, the state carried the diagnosis
    assert not (run / "workspace" / "app" / "notes.txt").exists()
    assert (run / "workspace" / "app" / "fix.txt").read_text().strip() == "1"
    grade = grade_run(run)
    outcomes = {c.id: c.outcome == "pass" for c in grade.checks}
    assert grade.status == RunStatus.GRADED and outcomes["no-evidence"] and outcomes["fixed"], grade
    # earlier session's artifacts under steps/step-01, the final one's at the top
    assert (run / "steps" / "step-01" / "agent.log").exists() and (run / "agent.log").exists()


def test_under_a_control_cell_nothing_persists(project: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    record = run_trial(_handoff(project, state_dir=False), project=project, run_dir=run)
    assert record.error is None, record.traceback
    assert (run / "workspace" / "app" / "fix.txt").read_text().strip() == "blind"
    # what session A wrote is kept for a reader, not handed to session B
    assert (run / "steps" / "step-01" / "state" / "note").read_text().strip() == "1"
    assert not (run / "state" / "note").exists()
    grade = grade_run(run)
    assert grade.status == RunStatus.GRADED and not grade.passed


def test_a_failed_step_ends_the_run_naming_it(project: Path, tmp_path: Path) -> None:
    agent = command_agent("if grep -q first; then echo broke; exit 3; fi; echo ran > app/second.txt")
    steps = (Step(name="first", prompt="first\n"), Step(name="second", prompt="second\n"))
    run = tmp_path / "run"
    record = run_trial(_with(make_job(agent=agent, writable=("**",)), steps), project=project, run_dir=run)
    assert record.error is None and record.agent_end is not None  # the agent's doing: graded
    assert (record.agent_end.cause, record.agent_end.step) == ("exit", "1/2 (first)")
    assert record.agent_end.detail == "the agent exited 3; the later steps never ran"
    assert [s.name for s in record.steps] == ["first"]  # the step never reached is not recorded
    assert not (run / "workspace" / "app" / "second.txt").exists()
    assert "broke" in (run / "agent.log").read_text()  # the failed session's log is the run's own
    grade = grade_run(run)  # graded as it stands: the tree the first session left
    assert grade.status == RunStatus.GRADED and grade.agent_end == record.agent_end


def test_steps_sum_runner_metrics(project: Path, tmp_path: Path) -> None:
    agent = command_agent('echo "{\\"input\\": 10, \\"output\\": 2}" >> "$BENCH_USAGE"')
    steps = tuple(Step(name=n, prompt=n) for n in ("a", "b", "c"))
    record = run_trial(_with(make_job(agent=agent), steps), project=project, run_dir=tmp_path / "run")
    assert record.error is None, record.traceback
    assert [s.metrics.input_tokens for s in record.steps] == [10, 10, 10]
    assert record.metrics.input_tokens == 30 and record.metrics.turns == 3
    stored = json.loads((tmp_path / "run" / "run.json").read_text())
    assert [s["name"] for s in stored["steps"]] == ["a", "b", "c"]


def test_state_setup_seeds_only_a_state_dir_cell(project: Path, tmp_path: Path) -> None:
    agent = command_agent(
        'cat "$BENCH_STATE_DIR"/memory.jsonl > app/seen.txt 2>/dev/null || echo none > app/seen.txt'
    )
    seed = ('echo \'{"key": "lax"}\' > memory.jsonl',)
    job = make_job(
        agent=agent, cell=none_cell(state_dir=True, state_setup=("echo level > level.txt",)), writable=("**",)
    )
    job = job.model_copy(update={"scenario": job.scenario.model_copy(update={"state_setup": seed})})
    run = tmp_path / "treated"
    record = run_trial(job, project=project, run_dir=run)
    assert record.error is None, record.traceback
    assert json.loads((run / "workspace" / "app" / "seen.txt").read_text()) == {"key": "lax"}
    assert (run / "state" / "level.txt").is_file() and (run / "diff.patch").read_text().count("+++") == 1
    control = job.model_copy(update={"cell": none_cell()})
    record = run_trial(control, project=project, run_dir=tmp_path / "control")
    assert record.error is None, record.traceback
    assert (tmp_path / "control" / "workspace" / "app" / "seen.txt").read_text().strip() == "none"


def test_state_setup_writing_into_the_working_tree_is_an_error(project: Path, tmp_path: Path) -> None:
    bad = ('echo oops > "$BENCH_WORKSPACE/app/leak.txt"',)
    job = make_job(cell=none_cell(state_dir=True, state_setup=bad))
    record = run_trial(job, project=project, run_dir=tmp_path / "run")
    assert record.error is not None and "wrote into the working tree (app/leak.txt)" in record.error
    assert grade_run(tmp_path / "run").status == RunStatus.FAILED_TO_RUN


def test_an_infra_retry_in_a_later_step_starts_where_that_step_began(project: Path, tmp_path: Path) -> None:
    (project / "incident.log").write_text(LOG)
    # step two's first attempt scribbles over the tree and the state, then fails as infrastructure (75)
    agent = command_agent(
        'if grep -q one; then echo one >> app/main.py; echo kept > "$BENCH_STATE_DIR/memo"; exit 0; fi; '
        'if [ ! -f "$TMPDIR/tried" ]; then touch "$TMPDIR/tried"; echo junk >> app/main.py; '
        'echo junk > "$BENCH_STATE_DIR/memo"; rm clue.log; exit 75; fi; '
        'cat clue.log > /dev/null && cat "$BENCH_STATE_DIR/memo" > app/seen.txt'
    )
    steps = (
        Step(name="one", prompt="one\n"),
        Step(name="two", prompt="two\n", evidence={"clue.log": "incident.log"}),
    )
    job = _with(make_job(agent=agent, cell=none_cell(state_dir=True), writable=("**",)), steps)
    run = tmp_path / "run"
    record = run_trial(job, project=project, run_dir=run)
    assert record.error is None, record.traceback or record.error
    assert record.infra_retries == 1
    main = (run / "workspace" / "app" / "main.py").read_text()
    assert main.count("one") == 1 and "junk" not in main  # step one's work kept, the failed attempt's gone
    assert (run / "workspace" / "app" / "seen.txt").read_text().strip() == "kept"
    assert not (run / "workspace" / "clue.log").exists()


def test_events_checks_read_the_preserved_state(project: Path, tmp_path: Path) -> None:
    agent = command_agent(
        'if grep -q one; then echo \'{"event": "write", "key": "k"}\' >> "$BENCH_STATE_DIR/events.jsonl"; fi'
    )
    steps = (Step(name="one", prompt="one\n"), Step(name="two", prompt="two\n"))
    check = CheckSpec(id="recorded", kind="events", params={"where": {"event": "write"}, "min": 1})
    verdicts = {}
    for label, state_dir in (("treated", True), ("control", False)):
        job = _with(make_job(agent=agent, cell=none_cell(state_dir=state_dir)), steps, (check,))
        record = run_trial(job, project=project, run_dir=tmp_path / label)
        assert record.error is None, record.traceback
        grade = grade_run(tmp_path / label)
        verdicts[label] = next(c.outcome for c in grade.checks if c.id == "recorded")
    # the control's step-one events exist (steps/step-01/state) but never reached the run's state
    assert verdicts == {"treated": "pass", "control": "fail"}
    assert (tmp_path / "control" / "steps" / "step-01" / "state" / "events.jsonl").is_file()


def test_either_is_set_when_any_of_its_events_is() -> None:
    user, budget = threading.Event(), threading.Event()
    either = Either(user, None, budget)
    assert not either.is_set() and not either.wait(0.01)
    budget.set()
    assert either.is_set() and either.wait(0.01) and either.wait()
