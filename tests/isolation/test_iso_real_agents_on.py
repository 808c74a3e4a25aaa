"""Real agent CLIs under `network: on` (bwrap): the sandbox keeps its own network namespace, the
model is reached directly on the gateway's model route (`NO_PROXY`), and a command the agent
runs reaches a host server (the stand-in for the internet) only through the gateway's proxy.

Needs the CLIs installed by `nox -s agents` (skips with the reason otherwise).
"""

from __future__ import annotations

import http.server
import json
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from compiler.contract import AgentSpec, Cell, Limits, Options, Provisions
from harness.gateway import read_log
from harness.modelserver import Script, ScriptedModelServer
from harness.trial import run_trial
from tests.adapters.helpers import agent_cache, require_cli
from tests.helpers import FIXTURE, make_job
from tests.isolation.conftest import require
from tests.isolation.test_iso_real_agents import AGENTS, PROBE

pytestmark = [pytest.mark.isolation, pytest.mark.agents]


class _Web(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"from the web\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def web() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Web)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("adapter", sorted(AGENTS))
def test_agent_trial_network_on(tmp_path: Path, web: int, adapter: str) -> None:
    post_path, steps = AGENTS[adapter]
    require_cli(adapter)
    require("bwrap")
    probe = f"curl -s -m 5 --noproxy '' http://127.0.0.1:{web}/page > app/net.txt"
    script = json.loads(json.dumps(steps).replace(json.dumps(PROBE)[1:-1], probe))
    with ScriptedModelServer(Script.model_validate(script), log_path=tmp_path / "model.jsonl") as model:
        project = tmp_path / "project"
        shutil.copytree(FIXTURE, project, symlinks=True)
        (project / ".cache" / "agents").mkdir(parents=True)
        (project / ".cache" / "agents" / adapter).symlink_to(agent_cache().resolve())
        cell = Cell(
            name="none/none/on",
            levels={"tool": "none", "knowledge": "none", "network": "on"},
            provisions=Provisions(network=True),
        )
        agent = AgentSpec(
            id=adapter,
            adapter=adapter,
            model="scripted-model",
            args={"base_url": model.url, "max_retries": 0},
        )
        job = make_job(
            agent=agent,
            cell=cell,
            options=Options(isolation="bwrap", infra_retries=0),
            limits=Limits(timeout_s=180),
        )
        run_dir = tmp_path / "run"
        record = run_trial(job, project=project, run_dir=run_dir)
        served = model.records()
    log_tail = (run_dir / "agent.log").read_text(errors="replace")[-3000:]
    assert record.error is None and record.exit_code == 0, log_tail
    assert (run_dir / "workspace" / "app" / "net.txt").read_text() == "from the web\n"
    log = read_log(run_dir / "gateway.jsonl")
    assert all(r.allowed for r in log), log
    assert {r.path.split("?")[0] for r in log if r.method == "POST"} == {post_path}
    assert [(r.method, r.host, r.port) for r in log if r.route is None] == [("GET", "127.0.0.1", web)]
    totals = record.extra["gateway"]
    assert totals["output_tokens"] == sum(r.output_tokens for r in served)
