"""The harness's own evidence of a provider failure: the gateway's log of the model route, read back.

An adapter's exit 75 leaves the rates (failed_to_run) only when this evidence is there, so what
counts is what the provider, or the way to it, did — never what the agent can bring about itself:
a refusal of the gateway's (a path off the allowlist, a spent budget), a request to a route other
than the model's, or one outside the attempt.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path

from harness.gateway import Gateway, Route, read_log
from harness.gateway.log import provider_failures
from harness.gateway.model_route import ROUTE
from harness.modelserver import Script, ScriptedModelServer
from tests.gateway.test_gateway import call

ASK = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_only_the_providers_own_failures_on_the_model_route_count(tmp_path: Path) -> None:
    script = Script.model_validate(
        {
            "model": "m",
            "tools_required": False,
            "steps": [{"text": "ok", "error": {"status": 529, "type": "overloaded_error", "times": 1}}],
        }
    )
    log = tmp_path / "gateway.jsonl"
    with ScriptedModelServer(script, log_path=tmp_path / "model.jsonl") as model:
        routes = [
            Route(ROUTE, model.url),
            Route("other", model.url),
            Route("down", f"http://127.0.0.1:{_free_port()}"),
        ]
        with Gateway(tmp_path / "gw", routes, log_path=log) as gw:
            since = time.time()
            assert call(gw, "POST", "/model/v1/messages", ASK)[0] == 529  # the provider is overloaded
            assert call(gw, "POST", "/model/v1/messages", ASK)[0] == 200
            assert call(gw, "POST", "/model/not-allowed", ASK)[0] == 403  # the gateway's refusal
            assert call(gw, "POST", "/down/v1/messages", ASK)[0] == 502  # another route's upstream
            until = time.time()
    assert len(read_log(log)) == 4
    (failed,) = provider_failures(log, route=ROUTE, since=since, until=until)
    assert (failed.status, failed.allowed, failed.path) == (529, True, "/model/v1/messages")
    assert provider_failures(log, route=ROUTE, since=until + 1, until=until + 2) == []  # another attempt's
    (down,) = provider_failures(log, route="down", since=since, until=until)
    assert down.status == 502 and down.reason.startswith("upstream:")  # no answer at all: the way to it


def test_a_refused_key_counts_only_when_the_key_is_the_harnesss(tmp_path: Path) -> None:
    """A 401 says the key is wrong: the harness's failure when the gateway injects it (the agent's own
    credential headers are stripped), the agent's own doing when it sent its own key."""
    step = {"text": "ok", "error": {"status": 401, "type": "authentication_error"}}
    script = Script.model_validate({"model": "m", "tools_required": False, "steps": [step]})
    log = tmp_path / "gateway.jsonl"
    with (
        ScriptedModelServer(script, log_path=tmp_path / "model.jsonl") as model,
        Gateway(tmp_path / "gw", [Route(ROUTE, model.url, headers={"x-api-key": "k"})], log_path=log) as gw,
    ):
        since = time.time()
        assert call(gw, "POST", "/model/v1/messages", ASK)[0] == 401
        until = time.time()
    assert [r.status for r in provider_failures(log, route=ROUTE, since=since, until=until, keyed=True)] == [
        401
    ]
    assert provider_failures(log, route=ROUTE, since=since, until=until, keyed=False) == []
