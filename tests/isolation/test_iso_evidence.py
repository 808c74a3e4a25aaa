"""Agent-written evidence is untrusted input: forged tool use and forged usage change no grade.

Two agents make the same fix and report the same honest usage row; one of them also forges:
rows appended to the trace (in its run directory, in the readable mirror), a registration
with the collector under a guessed token and under any token it can find in /proc, a request
to the tool runner for a program that is not a traced tool, and usage rows with negative, NaN,
huge and non-integer figures, and one nested too deeply for a JSON parser. Both runs are graded: the two grade.json agree on everything but
the malformed-row counts, and a third agent that really runs the tool shows the trace checks
can pass. Tests named `test_attack_*` are counted by the hostile-agent summary.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from compiler.contract import (
    AgentSpec,
    Cell,
    CheckSpec,
    Job,
    Options,
    Provisions,
    ScenarioJob,
)
from harness.artifacts.records import RunRecord
from harness.grade import grade_run
from harness.modelserver import Script, ScriptedModelServer
from harness.trial import run_trial
from tests.helpers import FIXTURE, assay, make_job, none_cell
from tests.isolation.conftest import require

pytestmark = pytest.mark.isolation

SEED = "import os\ndef handler(x):\n    return x\n"
FIXED = "def handler(x):\n    return x\n"
TOOL = '#!/bin/sh\necho "mytool $*"\nexit 0\n'
USAGE_OK = {"t": 1.0, "input": 1200, "output": 300, "cache_read": 0, "cache_write": 0, "model": "m"}
AGENT = """
import json, os, pathlib
pathlib.Path("app/main.py").write_text({fixed!r})
with open(os.environ["BENCH_USAGE"], "a") as fh:
    fh.write(json.dumps({usage!r}) + "\\n")
    if {forge!r}:
        for bad in ('{{"input": -90000000, "output": 5}}', '{{"input": NaN}}', '{{"output": 1e400}}',
                    '{{"input": 100000000000000000000}}', '{{"input": 12.5}}', '{{"input": true}}',
                    '{{"t": NaN, "input": 1}}', '{{"input": ' * 100000):
            fh.write(bad + "\\n")
if {use_tool!r}:
    os.system("mytool check app/main.py > /dev/null")
if {forge!r}:
    import socket, time
    row = {{"t": time.time() + 5, "tool": "mytool", "argv": ["mytool", "check", "app/main.py"], "exit": 0,
           "duration_s": 0.1, "stdout_bytes": 10, "stderr_bytes": 0, "output_bytes": 10}}
    forged = (json.dumps(row) + "\\n") * 3
    tried = {{}}
    for path in (os.path.join(os.environ["BENCH_RUN_DIR"], "trace.jsonl"), os.environ["BENCH_TRACE"]):
        try:
            open(path, "a").write(forged); tried[path] = "written"
        except OSError as exc:
            tried[path] = exc.strerror
    tokens = ["0" * 32]
    for pid in os.listdir("/proc"):
        try:
            env = open("/proc/%s/environ" % pid, "rb").read().split(b"\\0")
        except OSError:
            continue
        tokens += [e.split(b"=", 1)[1].decode() for e in env if e.startswith(b"ASSAY_TRACE_TOKEN=")]
    collector = os.path.join(os.path.dirname(os.environ["BENCH_TRACE"]), "trace.sock")
    for token in tokens:
        try:
            s = socket.socket(socket.AF_UNIX); s.connect(collector)
            s.sendall(("HELLO %s 1\\n" % token).encode() + forged.encode()); s.recv(10); s.close()
        except OSError:
            pass
    try:
        s = socket.socket(socket.AF_UNIX); s.connect(os.environ["ASSAY_TOOL_SOCKET"])
        req = {{"tool": "sh", "argv": ["sh", "-c", "echo pwned"], "cwd": os.getcwd(), "env": {{}}}}
        socket.send_fds(s, [json.dumps(req).encode() + b"\\n"], [0, 1, 2]); tried["runner"] = s.recv(100).decode()
    except OSError as exc:
        tried["runner"] = str(exc)
    open(os.path.join(os.environ["HOME"], "tried.json"), "w").write(json.dumps({{"tried": tried, "tokens": tokens}}))
"""
VOLATILE = ("graded_at", "duration_s", "malformed_rows")


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    for rel, text in {"tools/bin/mytool": TOOL, "scenarios/fix/seed/app/main.py": SEED}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "tools/bin/mytool").chmod(0o755)
    return root


def _job(project: Path, name: str, iso: str, *, forge: bool, use_tool: bool) -> Job:
    code = AGENT.format(fixed=FIXED, usage=USAGE_OK, forge=forge, use_tool=use_tool)
    (project / f"{name}.py").write_text(code)
    scenario = ScenarioJob(
        id="fix",
        root="scenarios/fix",
        family="lint",
        seed="scenarios/fix/seed",
        entry=("app/main.py",),
        writable=("app/**",),
        prompt="Remove the unused import.\n",
        checks=(
            CheckSpec(id="compiles", kind="command", params={"run": "python3 -m py_compile app/main.py"}),
            CheckSpec(id="used-the-tool", kind="trace", params={"command": "mytool"}),
            CheckSpec(
                id="checked-after-last-write",
                kind="trace",
                params={"command": "mytool", "subcommand": "check", "after_last_write": True},
            ),
        ),
    )
    cell = Cell(
        name="bin/none/off",
        levels={"tool": "bin", "knowledge": "none", "network": "off"},
        provisions=Provisions(path=("tools/bin",), trace=("mytool",), home_files={"agent.py": f"{name}.py"}),
    )
    agent = AgentSpec(id=name, adapter="command", command="python3 $HOME/agent.py")
    return make_job(scenario, agent=agent, cell=cell, options=Options(isolation=iso, infra_retries=0))


def _run(project: Path, tmp_path: Path, name: str, iso: str, **how: bool) -> tuple[Path, RunRecord]:
    run_dir = tmp_path / "runs" / name
    record = run_trial(_job(project, name, iso, **how), project=project, run_dir=run_dir)
    assert record.error is None, record.traceback
    grade_run(run_dir)
    return run_dir, record


def _comparable(value: Any) -> Any:
    """A grade as JSON, without what differs between any two gradings (times, malformed counts)."""
    if isinstance(value, dict):
        return {k: _comparable(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_comparable(v) for v in value]
    return value


def _grade(run_dir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run_dir / "grade.json").read_text())
    return data


def _forgery_changes_nothing(tmp_path: Path, iso: str) -> dict[str, Any]:
    project = _project(tmp_path)
    honest, honest_run = _run(project, tmp_path, "honest", iso, forge=False, use_tool=False)
    forger, forger_run = _run(project, tmp_path, "forger", iso, forge=True, use_tool=False)
    user, _ = _run(project, tmp_path, "user", iso, forge=False, use_tool=True)
    assert _comparable(_grade(forger)) == _comparable(_grade(honest))
    checks = {c["id"]: c["outcome"] for c in _grade(forger)["checks"]}
    assert checks == {"compiles": "pass", "used-the-tool": "fail", "checked-after-last-write": "fail"}
    assert {c["id"]: c["outcome"] for c in _grade(user)["checks"]}["checked-after-last-write"] == "pass"
    assert _grade(user)["tool_use"]["invocations"] == 1
    usage = _grade(forger)["usage"]
    assert (usage["input"], usage["output"], usage["malformed_rows"]) == (1200, 300, 8)
    assert forger_run.metrics == honest_run.metrics.model_copy(
        update={"duration_s": forger_run.metrics.duration_s}
    )
    assert not (forger / "trace.jsonl").exists()
    tried: dict[str, Any] = json.loads((forger / "home" / "tried.json").read_text())
    # A token found in /proc (an ancestor's environment, under bwrap) was already used: refused.
    assert forger_run.trace_channel is not None
    assert forger_run.trace_channel.refused == len(tried["tokens"]) >= 1
    regraded = assay("grade", "--regrade", forger, cwd=project)  # exit 1: the trace checks fail
    assert regraded.returncode == 1 and "regraded FAIL" in regraded.stderr, regraded.stderr
    assert _comparable(_grade(forger)) == _comparable(_grade(honest))
    return tried


@pytest.fixture(params=["bwrap", "unshare"])
def iso(request: pytest.FixtureRequest) -> str:
    require(request.param)
    return str(request.param)


def test_attack_e2e_forge_tool_use_and_usage(tmp_path: Path, iso: str) -> None:
    tried = _forgery_changes_nothing(tmp_path, iso)
    assert tried["tried"][str(tmp_path / "runs" / "forger" / "trace.jsonl")] == "written"  # to its outbox
    assert not tried["tried"]["runner"].startswith("EXIT 0")
    assert "pwned" not in (tmp_path / "runs" / "forger" / "agent.log").read_text()


def test_forged_evidence_changes_nothing_without_a_sandbox_either(tmp_path: Path) -> None:
    """Under isolation `none` the agent writes its run directory itself: trace.jsonl is still the
    collector's alone (rewritten at the end), usage rows are still validated."""
    _forgery_changes_nothing(tmp_path, "none")


LIAR = r"""
import json, os, urllib.request
args = json.loads(os.environ["BENCH_AGENT_ARGS"])
req = urllib.request.Request(args["base_url"] + "/v1/messages", method="POST",
    data=json.dumps({"model": "m", "max_tokens": 20, "messages": [{"role": "user", "content": "hi"}]}).encode(),
    headers={"x-api-key": args.get("api_key", ""), "content-type": "application/json"})
urllib.request.urlopen(req, timeout=10).read()
with open(os.environ["BENCH_USAGE"], "w") as fh:  # one turn claimed as almost free
    fh.write(json.dumps({"t": 1.0, "input": 1, "output": 1}) + "\n")
"""


def test_attack_e2e_understate_usage_behind_the_gateway(tmp_path: Path, iso: str) -> None:
    """Where a gateway carried the model, its account is the run's: the adapter's understated
    usage.jsonl is only compared with it, and the disagreement is recorded in run.json and grade.json."""
    script = Script.model_validate({"model": "m1", "steps": [{"text": "Hello there."}]})
    with ScriptedModelServer(script, log_path=tmp_path / "model.jsonl") as model:
        project = tmp_path / "project"
        shutil.copytree(FIXTURE, project, symlinks=True)
        (project / "liar.py").write_text(LIAR)
        agent = AgentSpec(
            id="liar", adapter="command", command="python3 $HOME/liar.py", args={"base_url": model.url}
        )
        job = make_job(
            agent=agent,
            cell=none_cell(home_files={"liar.py": "liar.py"}),
            options=Options(isolation=iso, infra_retries=0),
        )
        run_dir = tmp_path / "run"
        record = run_trial(job, project=project, run_dir=run_dir)
        (served,) = model.records()
    assert record.error is None, record.traceback
    assert (record.metrics.input_tokens, record.metrics.output_tokens) == (
        served.input_tokens,
        served.output_tokens,
    )
    check = record.usage_check
    assert check is not None and check.adapter["input_tokens"] == 1
    assert {"input_tokens", "output_tokens"} <= set(check.differs)
    grade = grade_run(run_dir)
    assert grade.usage.source == "gateway" and grade.usage.input == served.input_tokens
    assert {"input_tokens", "output_tokens"} <= set(grade.usage.adapter_differs)


BACKDATE = """
import os, pathlib
p = pathlib.Path("app/main.py")
p.write_text({fixed!r})
checked = os.stat(p).st_mtime
os.system("mytool check app/main.py > /dev/null")
p.write_text("import os\\n" + {fixed!r})  # the last write comes after the check...
os.utime(p, (checked, checked))  # ...and is dated back to before it
"""


def test_attack_e2e_backdate_the_last_write(tmp_path: Path, iso: str) -> None:
    """`checked-after-last-write` dates the last write by a time the agent cannot set back (the
    ctime): a write after the tool ran, its mtime set to before the run, had made it pass."""
    project = _project(tmp_path)
    job = _job(project, "backdater", iso, forge=False, use_tool=True)
    (project / "backdater.py").write_text(BACKDATE.format(fixed=FIXED))
    run_dir = tmp_path / "runs" / "backdater"
    record = run_trial(job, project=project, run_dir=run_dir)
    assert record.error is None, record.traceback
    assert (run_dir / "workspace" / "app" / "main.py").read_text().startswith("import os")
    grade = grade_run(run_dir)
    checks = {c.id: c.outcome for c in grade.checks}
    assert checks == {"compiles": "pass", "used-the-tool": "pass", "checked-after-last-write": "fail"}
