"""Network off, model on, through the runner: the gateway is started, used, logged, and closed."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from compiler.contract import AgentSpec, Canaries, Cell, Limits, Options, Provisions
from harness.gateway import PLACEHOLDER_KEY, read_log
from harness.modelserver import Script, ScriptedModelServer
from harness.trial import run_trial
from tests.helpers import FIXTURE, make_job
from tests.isolation.conftest import require

pytestmark = pytest.mark.isolation

CLIENT = r"""
import json, os, socket, urllib.request
args = json.loads(os.environ["BENCH_AGENT_ARGS"])
req = urllib.request.Request(args["base_url"] + "/v1/messages", method="POST",
    data=json.dumps({"model": "m", "max_tokens": 20, "stream": True,
                     "messages": [{"role": "user", "content": "hi"}]}).encode(),
    headers={"x-api-key": args.get("api_key", ""), "content-type": "application/json"})
ok = "message_stop" in urllib.request.urlopen(req, timeout=10).read().decode()
direct = "blocked"
try:
    socket.create_connection(("127.0.0.1", int(os.environ["DIRECT_PORT"])), timeout=2); direct = "reached"
except OSError:
    pass
open("app/result.json", "w").write(json.dumps({"ok": ok, "direct": direct, "key": args.get("api_key"),
    "secret_in_env": "MODEL_KEY" in os.environ}))
"""


@pytest.fixture
def model(tmp_path: Path) -> Iterator[ScriptedModelServer]:
    script = Script.model_validate({"model": "m1", "steps": [{"text": "Hello there."}]})
    with ScriptedModelServer(script, log_path=tmp_path / "model.jsonl") as server:
        yield server


@pytest.mark.parametrize("iso", ["bwrap", "unshare"])
def test_trial_reaches_model_only_through_gateway(
    tmp_path: Path, model: ScriptedModelServer, iso: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    require(iso)
    monkeypatch.setenv("MODEL_KEY", "real-secret-key")
    project = tmp_path / "project"
    shutil.copytree(FIXTURE, project, symlinks=True)
    (project / "client.py").write_text(CLIENT)
    port = model.url.rsplit(":", 1)[1]
    probe = f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2)\""
    cell = Cell(
        name="none/none/off",
        levels={"tool": "none", "knowledge": "none", "network": "off"},
        provisions=Provisions(
            env={"DIRECT_PORT": port}, files={"client.py": "client.py"}, canaries=Canaries(must_fail=(probe,))
        ),
    )
    agent = AgentSpec(
        id="client",
        adapter="command",
        command="python3 client.py",
        args={"base_url": model.url, "api_key_env": "MODEL_KEY"},
    )
    job = make_job(
        agent=agent,
        cell=cell,
        options=Options(isolation=iso, infra_retries=0, env_pass=("MODEL_KEY",)),
        limits=Limits(timeout_s=60),
    )
    run_dir = tmp_path / "run"
    record = run_trial(job, project=project, run_dir=run_dir)
    assert record.error is None, record.traceback or record.error
    assert record.invalid is None and all(
        c.ok for c in record.canaries
    )  # the network canary failed, as it must
    result = json.loads((run_dir / "workspace" / "app" / "result.json").read_text())
    assert result == {"ok": True, "direct": "blocked", "key": PLACEHOLDER_KEY, "secret_in_env": False}
    log = read_log(run_dir / "gateway.jsonl")
    assert [(r.path, r.allowed, r.status) for r in log] == [("/model/v1/messages", True, 200)]
    (served,) = model.records()
    summary = record.extra["gateway"]
    assert (summary["turns"], summary["input_tokens"], summary["output_tokens"], summary["refused"]) == (
        1,
        served.input_tokens,
        served.output_tokens,
        0,
    )
    assert not (run_dir / ".gateway" / "gateway.sock").exists()


ON_CLIENT = r"""
import http.client, json, os, socket, urllib.request
from urllib.parse import urlsplit
args = json.loads(os.environ["BENCH_AGENT_ARGS"])
req = urllib.request.Request(args["base_url"] + "/v1/messages", method="POST",
    data=json.dumps({"model": "m", "max_tokens": 20, "messages": [{"role": "user", "content": "hi"}]}).encode(),
    headers={"x-api-key": args.get("api_key", ""), "content-type": "application/json"})
ok = b"usage" in urllib.request.urlopen(req, timeout=10).read()  # NO_PROXY: the model route stays direct
proxy = urlsplit(os.environ["HTTP_PROXY"])
conn = http.client.HTTPConnection(proxy.hostname, proxy.port, timeout=10)
conn.request("GET", "http://127.0.0.1:%s/v1/models" % os.environ["WEB_PORT"])
web = conn.getresponse().status
direct = "blocked"
try:
    socket.create_connection(("127.0.0.1", int(os.environ["WEB_PORT"])), timeout=2); direct = "reached"
except OSError:
    pass
open("app/result.json", "w").write(json.dumps({"ok": ok, "web": web, "direct": direct}))
"""


@pytest.mark.parametrize("iso", ["bwrap", "unshare"])
def test_network_on_trial_goes_out_only_through_the_gateway(
    tmp_path: Path, model: ScriptedModelServer, iso: str
) -> None:
    """Under on, the trial keeps its own network namespace: the host's loopback (a stand-in for the
    internet; here the model server, on another port than the model route uses) is reached only as a
    proxy request, a row of gateway.jsonl next to the model's."""
    require(iso)
    project = tmp_path / "project"
    shutil.copytree(FIXTURE, project, symlinks=True)
    (project / "client.py").write_text(ON_CLIENT)
    port = model.url.rsplit(":", 1)[1]
    cell = Cell(
        name="none/none/on",
        levels={"tool": "none", "knowledge": "none", "network": "on"},
        provisions=Provisions(
            network=True,
            env={"WEB_PORT": port},
            files={"client.py": "client.py"},
            canaries=Canaries(must_pass=("python3 -c 'import os; os.environ[\"HTTP_PROXY\"]'",)),
        ),
    )
    agent = AgentSpec(
        id="client", adapter="command", command="python3 client.py", args={"base_url": model.url}
    )
    job = make_job(
        agent=agent, cell=cell, options=Options(isolation=iso, infra_retries=0), limits=Limits(timeout_s=60)
    )
    run_dir = tmp_path / "run"
    record = run_trial(job, project=project, run_dir=run_dir)
    assert record.error is None, record.traceback or record.error
    assert record.invalid is None and all(c.ok for c in record.canaries)
    result = json.loads((run_dir / "workspace" / "app" / "result.json").read_text())
    assert result == {"ok": True, "web": 200, "direct": "blocked"}
    log = read_log(run_dir / "gateway.jsonl")
    assert [(r.method, r.route, r.host, r.allowed, r.status) for r in log] == [
        ("POST", "model", None, True, 200),
        ("GET", None, "127.0.0.1", True, 200),
    ]
    assert log[0].usage is not None and log[1].usage is None
    assert record.extra["gateway"]["turns"] == 1
