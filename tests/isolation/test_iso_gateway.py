"""Network off, model on: a sandboxed client reaches the model only through the gateway."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.gateway import DEFAULT_PORT, PLACEHOLDER_KEY, Gateway, Route, usage_totals
from harness.modelserver import Script, ScriptedModelServer
from tests.isolation.conftest import PYTHON, Trial

pytestmark = pytest.mark.isolation

CLIENT = """
import json, os, socket, urllib.request
req = urllib.request.Request(os.environ["ANTHROPIC_BASE_URL"] + "/v1/messages", method="POST",
    data=json.dumps({"model": "claude-x", "max_tokens": 20, "stream": True,
                     "messages": [{"role": "user", "content": "hi"}]}).encode(),
    headers={"x-api-key": os.environ["ANTHROPIC_API_KEY"], "content-type": "application/json"})
body = urllib.request.urlopen(req, timeout=10).read().decode()
s = socket.socket(); s.settimeout(2)
try:
    s.connect(("127.0.0.1", int(os.environ["DIRECT_PORT"]))); direct = "reached"
except OSError:
    direct = "blocked"
try:
    urllib.request.urlopen(os.environ["ANTHROPIC_BASE_URL"] + "/admin", timeout=5); other = "allowed"
except Exception as e:
    other = str(getattr(e, "code", e))
print(json.dumps({"model_stream_ok": "message_stop" in body, "direct": direct, "other": other,
                  "sockets": sorted(os.listdir(os.environ["GW_DIR"]))}))
"""


@pytest.fixture
def model(tmp_path: Path) -> Iterator[ScriptedModelServer]:
    script = Script.model_validate({"model": "m1", "steps": [{"text": "Hello there."}]})
    with ScriptedModelServer(script, log_path=tmp_path / "model.jsonl") as server:
        yield server


def test_network_off_reaches_the_model_only_through_the_gateway(
    trial: Trial, model: ScriptedModelServer
) -> None:
    port = int(model.url.rsplit(":", 1)[1])
    gw_dir = trial.root / "gw"
    log = trial.root / "run" / "gateway.jsonl"
    with Gateway(
        gw_dir, [Route("anthropic", model.url, headers={"x-api-key": "real-key"})], log_path=log
    ) as gw:
        spec = trial.spec(
            gw.wrap_argv([PYTHON, "-c", CLIENT]),
            mounts=(gw.mount(),),
            env={
                "ANTHROPIC_BASE_URL": gw.base_url("anthropic"),
                "ANTHROPIC_API_KEY": PLACEHOLDER_KEY,
                "DIRECT_PORT": str(port),
                "GW_DIR": str(gw_dir),
            },
        )
        out = trial.run(spec)
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout)
    assert seen == {
        "model_stream_ok": True,
        "direct": "blocked",
        "other": "403",
        "sockets": ["forward.py", "gateway.sock"],
    }
    records = gw.records()
    assert [(r.path, r.allowed) for r in records] == [
        ("/anthropic/v1/messages", True),
        ("/anthropic/admin", False),
    ]
    (served,) = model.records()
    totals = usage_totals(log)
    assert (totals["turns"], totals["input_tokens"], totals["output_tokens"]) == (
        1,
        served.input_tokens,
        served.output_tokens,
    )
    assert f"{DEFAULT_PORT}" in gw.base_url("anthropic")
