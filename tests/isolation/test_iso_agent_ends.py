"""Leaving the denominator by what it does, through the real runner under a real isolation.

An agent about to fail (each attack first breaks `app/main.py`, so the `compiles` check fails) ends
its run in a way it hopes the harness will blame on itself: it runs out its time, fork-bombs, floods
its output, exits 75 ("provider failure") with no provider failing, prints the shell's "not found"
line and exits 127, writes a context.json naming context it was not given (or one no one can read),
fails the first session of a two-session run, or breaks its own adapter before the next session.
Blocked means: the run is graded — in every rate — and fails, with the cause recorded on run.json
and grade.json (`agent_end`). A provider failure the model gateway saw is still the harness's side:
`failed_to_run` after the retries. Tests named `test_attack_*` are counted by the suite's summary.
"""

from __future__ import annotations

import http.server
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from compiler.contract import AgentSpec, Canaries, Cell, Job, Limits, Options, Provisions, Step
from harness.artifacts.records import Grade, RunRecord, RunStatus
from harness.grade import grade_run
from harness.modelserver import Script, ScriptedModelServer
from harness.trial import run_trial
from tests.helpers import FIXTURE, command_agent, make_job
from tests.isolation.conftest import Trial

pytestmark = pytest.mark.isolation

BREAK = "echo 'def (' >> app/main.py"
"""What the agent about to fail leaves: a tree that fails the `compiles` check."""

CLIENT = r"""
import http.client, json, os, sys, urllib.error, urllib.request
from urllib.parse import urlsplit
open("app/main.py", "a").write("def (\n")
args = json.loads(os.environ["BENCH_AGENT_ARGS"])
body = json.dumps({"model": "m", "max_tokens": 20, "messages": [{"role": "user", "content": "hi"}]}).encode()
try:
    if len(sys.argv) > 1:  # a host of its choosing, through the gateway's forward proxy (network: on)
        proxy = urlsplit(os.environ["HTTP_PROXY"])
        conn = http.client.HTTPConnection(proxy.hostname, proxy.port, timeout=10)
        conn.request("POST", sys.argv[1], body=body, headers={"content-type": "application/json"})
        print("the host answered", conn.getresponse().status, file=sys.stderr)
    else:  # its model, through the gateway
        req = urllib.request.Request(args["base_url"] + "/v1/messages", method="POST", data=body,
            headers={"x-api-key": args.get("api_key", ""), "content-type": "application/json"})
        urllib.request.urlopen(req, timeout=10).read()
        print("the model answered 200", file=sys.stderr)
except urllib.error.HTTPError as exc:
    print("the model answered", exc.code, file=sys.stderr)
except Exception as exc:
    print("no answer:", exc, file=sys.stderr)
sys.exit(75)  # whatever the answer: "a provider failure"
"""


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    dest = tmp_path / "project"
    shutil.copytree(FIXTURE, dest, symlinks=True)
    (dest / "client.py").write_text(CLIENT)
    (dest / "agent.sh").write_text(f"#!/bin/sh\n{BREAK}; rm -f ./agent.sh; exit 0\n")
    (dest / "agent.sh").chmod(0o755)
    yield dest


def _job(
    iso: str, agent: AgentSpec, *, limits: Limits | None = None, cell: Cell | None = None, retries: int = 0
) -> Job:
    return make_job(
        agent=agent,
        cell=cell,
        options=Options(isolation=iso, infra_retries=retries),
        limits=limits or Limits(timeout_s=60),
        writable=("**",),
    )


def _run(project: Path, tmp_path: Path, job: Job) -> tuple[RunRecord, Grade]:
    run_dir = tmp_path / "run"
    record = run_trial(job, project=project, run_dir=run_dir)
    return record, grade_run(run_dir, project=project)


def _graded_failing(record: RunRecord, grade: Grade, cause: str) -> None:
    """Blocked: in the rates (graded, not invalid), failing, the agent's doing recorded on both records."""
    assert record.error is None, record.traceback or record.error
    assert record.invalid is None and grade.invalid is None
    assert grade.status is RunStatus.GRADED and not grade.passed, grade.error
    assert [c.outcome for c in grade.checks if c.id == "compiles"] == ["fail"]
    assert record.agent_end is not None and record.agent_end.cause == cause, record.agent_end
    assert grade.agent_end == record.agent_end


def _steps(job: Job, *names: str) -> Job:
    steps = tuple(Step(name=n, prompt=f"{n}\n") for n in names)
    return job.model_copy(update={"scenario": job.scenario.model_copy(update={"steps": steps})})


def test_attack_e2e_time_out_on_purpose(project: Path, tmp_path: Path, iso: str) -> None:
    job = _job(iso, command_agent(f"{BREAK}; sleep 600"), limits=Limits(timeout_s=2))
    record, grade = _run(project, tmp_path, job)
    _graded_failing(record, grade, "timeout")
    assert record.timed_out and "timeout" in record.limits_hit


def test_attack_e2e_fork_bomb_to_leave(project: Path, tmp_path: Path, iso: str) -> None:
    job = _job(
        iso, command_agent(f"{BREAK}; b() {{ b | b & }}; b; sleep 50; exit 0"), limits=Limits(timeout_s=30)
    )
    record, grade = _run(project, tmp_path, job)
    assert record.agent_end is not None, record
    _graded_failing(record, grade, record.agent_end.cause)
    assert "pids" in record.limits_hit and record.agent_end.cause in ("limit", "exit", "timeout")


def test_attack_e2e_flood_the_output_to_leave(project: Path, tmp_path: Path, iso: str) -> None:
    job = _job(iso, command_agent(f"{BREAK}; yes flood"), limits=Limits(timeout_s=30, output_bytes=200_000))
    record, grade = _run(project, tmp_path, job)
    _graded_failing(record, grade, "output")
    assert "output" in record.limits_hit


def test_attack_e2e_fake_exit_75(project: Path, tmp_path: Path, iso: str) -> None:
    """No model at all: an exit 75 nothing on the harness's side explains is the agent's claim."""
    record, grade = _run(project, tmp_path, _job(iso, command_agent(f"{BREAK}; exit 75"), retries=1))
    _graded_failing(record, grade, "claimed_infra")
    assert record.infra_retries == 1 and record.exit_code == 75  # retried as ever, then graded


def _model(tmp_path: Path, *, status: int | None) -> ScriptedModelServer:
    step: dict[str, object] = {"text": "Hello."}
    if status is not None:
        step["error"] = {"status": status, "type": "overloaded_error", "message": "Overloaded"}
    script = Script.model_validate({"model": "m", "tools_required": False, "steps": [step] * 4})
    return ScriptedModelServer(script, log_path=tmp_path / "model.jsonl")


def _client(model: ScriptedModelServer, *extra: str) -> AgentSpec:
    return AgentSpec(
        id="client",
        adapter="command",
        command=" ".join(["python3 client.py", *extra]),
        args={"base_url": model.url},
    )


def _cell(*, network: bool = False) -> Cell:
    name = f"none/none/{'on' if network else 'off'}"
    return Cell(
        name=name,
        levels={"tool": "none", "knowledge": "none", "network": "on" if network else "off"},
        control=not network,
        provisions=Provisions(network=network, files={"client.py": "client.py"}, canaries=Canaries()),
    )


def test_attack_e2e_fake_exit_75_after_a_good_answer(project: Path, tmp_path: Path, iso: str) -> None:
    """The model answered 200 through the gateway: its log shows no provider failure."""
    with _model(tmp_path, status=None) as model:
        record, grade = _run(project, tmp_path, _job(iso, _client(model), cell=_cell(), retries=1))
    _graded_failing(record, grade, "claimed_infra")
    assert "the model gateway saw no provider failure" in record.agent_end.detail  # type: ignore[union-attr]


class _Failing(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.send_response(503)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_attack_e2e_fake_exit_75_after_a_5xx_from_a_host_it_chose(
    project: Path, tmp_path: Path, iso: str
) -> None:
    """Under network: on the agent reaches any host through the gateway's proxy; a 503 from one it
    chose (a loopback listener standing in for the internet) is no provider failure."""
    web = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Failing)
    threading.Thread(target=web.serve_forever, daemon=True).start()
    try:
        with _model(tmp_path, status=None) as model:
            agent = _client(model, f"http://127.0.0.1:{web.server_address[1]}/v1/messages")
            record, grade = _run(project, tmp_path, _job(iso, agent, cell=_cell(network=True), retries=1))
    finally:
        web.shutdown()
        web.server_close()
    _graded_failing(record, grade, "claimed_infra")
    assert "the host answered 503" in (tmp_path / "run" / "agent.log").read_text()


def test_a_provider_failure_the_gateway_saw_fails_to_run_after_the_retries(
    project: Path, tmp_path: Path, iso: str
) -> None:
    """The real thing: the provider answers 529 every time, the adapter exits 75, the runner retries,
    and the harness's own log of the model route shows why: failed_to_run, out of the rates."""
    with _model(tmp_path, status=529) as model:
        record, grade = _run(project, tmp_path, _job(iso, _client(model), cell=_cell(), retries=1))
    assert record.infra_retries == 1 and record.exit_code == 75 and record.agent_end is None
    assert record.error is not None and record.error.startswith(
        "infrastructure failure: adapter exited 75 after 1 retry; the model gateway saw 1 failed model request(s): 529"
    ), record.error
    assert grade.status is RunStatus.FAILED_TO_RUN and grade.error == record.error


def test_attack_e2e_fake_not_found_and_exit_127(project: Path, tmp_path: Path, iso: str) -> None:
    """The shell's own words about a program it cannot run, printed by the agent: no evidence of anything."""
    cmd = f"{BREAK}; echo 'sh: 1: exec: sh: not found' >&2; echo 'sh: sh: Permission denied' >&2; exit 127"
    record, grade = _run(project, tmp_path, _job(iso, command_agent(f"sh -c {cmd!r}")))
    _graded_failing(record, grade, "exit")
    assert record.exit_code == 127 and record.agent_end.detail == "the agent exited 127"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "context",
    ['{"loaded": ["/root/.claude/CLAUDE.md", "/etc/passwd"]}', "not json"],
    ids=["names-other-context", "unreadable"],
)
def test_attack_e2e_forge_context_json(project: Path, tmp_path: Path, iso: str, context: str) -> None:
    cmd = f"{BREAK}; printf '%s' '{context}' > \"$BENCH_CONTEXT\"; exit 1"
    record, grade = _run(project, tmp_path, _job(iso, command_agent(cmd)))
    _graded_failing(record, grade, "exit")
    assert grade.context.present  # recorded and shown, advisory
    assert grade.context.unexpected == ("/root/.claude/CLAUDE.md", "/etc/passwd") or grade.context.error


def test_attack_e2e_fail_the_first_session_on_purpose(project: Path, tmp_path: Path, iso: str) -> None:
    job = _steps(_job(iso, command_agent(f"if grep -q one; then {BREAK}; exit 3; fi; exit 0")), "one", "two")
    record, grade = _run(project, tmp_path, job)
    _graded_failing(record, grade, "exit")
    assert record.agent_end.step == "1/2 (one)" and [s.name for s in record.steps] == ["one"]  # type: ignore[union-attr]


def test_attack_e2e_break_its_own_adapter_before_the_next_session(
    project: Path, tmp_path: Path, iso: str
) -> None:
    """The adapter is a script in the workspace (a file of the cell): the first session deletes it.
    The next launch's check sees a program the agent could change, so the failed start is its own."""
    cell = _cell().model_copy(update={"provisions": Provisions(files={"agent.sh": "agent.sh"})})
    job = _steps(_job(iso, command_agent("./agent.sh"), cell=cell), "one", "two")
    record, grade = _run(project, tmp_path, job)
    _graded_failing(record, grade, "exit")
    assert record.exit_code == 127 and record.agent_end.step == "2/2 (two)"  # type: ignore[union-attr]


def test_attack_e2e_lock_its_own_folders_before_the_next_session(
    project: Path, tmp_path: Path, iso: str
) -> None:
    """`chmod 000` on its workspace (the next sandbox's working folder), HOME, TMPDIR and state: the
    harness gives them back the modes it made them with, so the next session starts and fails."""
    lock = 'chmod 000 "$HOME" "$TMPDIR" "$BENCH_STATE_DIR" .'
    job = _steps(
        _job(iso, command_agent(f"if grep -q one; then {lock}; exit 0; fi; {BREAK}; exit 4")), "one", "two"
    )
    record, grade = _run(project, tmp_path, job)
    _graded_failing(record, grade, "exit")
    assert [s.name for s in record.steps] == ["one", "two"] and record.agent_end.step == "2/2 (two)"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("program", "agent_ran", "starts"),
    [
        ("/usr/bin/no-such-agent", False, False),  # the first launch: nothing of the agent's has run
        ("/usr/bin/no-such-agent", True, False),  # read-only to the agent: gone is the harness's side
        ("./agent.sh", False, False),
        ("./agent.sh", True, True),  # in the workspace: the agent may have removed it itself
    ],
)
def test_the_launch_check_blames_only_what_the_agent_could_not_change(
    trial: Trial, program: str, agent_ran: bool, starts: bool
) -> None:
    from harness.trial import agent

    job = make_job(agent=command_agent(f"{program} --go"))
    script = agent.probe_phase(job, agent.command(job), agent_ran=agent_ran)
    out = trial.run(trial.spec(["/bin/sh", "-c", script]))
    assert (out.returncode == 0) is starts, out.stdout + out.stderr
    if not starts:
        assert agent.probe_failure(out.stdout.encode()) is not None
        assert f"assay: {program} is not found in the sandbox" in out.stdout
