"""The per-trial gateway hook: when it starts, what it rewrites, what it hides."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler.contract import AgentSpec, Cell, Job, Provisions
from harness.gateway import PLACEHOLDER_KEY
from harness.gateway.model_route import MODEL_PATHS, for_trial
from harness.gateway.proxy import Proxy
from harness.sandbox.isolation import select
from harness.sandbox.isolation.bwrap import BwrapIsolation
from tests.helpers import make_job


def _job(adapter: str = "claude_code", network: bool = False) -> Job:
    cell = Cell(
        name="c", levels={"network": "on" if network else "off"}, provisions=Provisions(network=network)
    )
    return make_job(agent=AgentSpec(id="a", adapter=adapter), cell=cell)


def test_no_gateway_without_endpoint_or_isolation(tmp_path: Path) -> None:
    with for_trial(_job(), {"model": "m"}, run_dir=tmp_path, isolation=BwrapIsolation()) as gw:
        assert gw is None
    with for_trial(
        _job(), {"base_url": "http://127.0.0.1:1"}, run_dir=tmp_path, isolation=select("none")
    ) as gw:
        assert gw is None


@pytest.mark.parametrize(("adapter", "header"), [("claude_code", "x-api-key"), ("codex", "Authorization")])
def test_key_moves_from_sandbox_to_gateway(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, adapter: str, header: str
) -> None:
    monkeypatch.setenv("PROVIDER_KEY", "real-key")
    args = {"base_url": "https://provider.invalid/v1", "api_key_env": "PROVIDER_KEY"}
    with for_trial(_job(adapter), args, run_dir=tmp_path, isolation=BwrapIsolation()) as gw:
        assert gw is not None
        assert gw.args["base_url"] == "http://127.0.0.1:8765/model"
        assert gw.args["api_key"] == PLACEHOLDER_KEY and "api_key_env" not in gw.args
        assert gw.scrub({"PROVIDER_KEY": "real-key", "PATH": "/bin"}) == {"PATH": "/bin"}
        route = gw.gateway.routes["model"]
        assert "real-key" in route.headers[header]
        assert gw.wrap(["agent"])[-1] == "agent" and gw.mount().writable is False
        sock = gw.gateway.socket_path
        assert sock.exists()
        assert len(str(sock)) < 107  # whatever the depth of the run dir
    assert not sock.exists()
    assert not sock.parent.exists()


def test_network_on_opens_the_allowlist_and_the_proxy(tmp_path: Path) -> None:
    with for_trial(
        _job(network=True), {"base_url": "http://127.0.0.1:1"}, run_dir=tmp_path, isolation=BwrapIsolation()
    ) as gw:
        assert gw is not None
        assert gw.gateway.routes["model"].paths is None
        assert gw.port == 8765 and gw.carries_network  # the sandbox's own loopback, as under off
        proxy = Proxy(gw.gateway.routes, tmp_path / "x.jsonl")
        assert proxy.match("GET", "/model/anything/at/all")[2] == ""
        env = gw.scrub({"PATH": "/bin"})
        assert env["HTTPS_PROXY"] == env["http_proxy"] == env["ALL_PROXY"] == "http://127.0.0.1:8765"
        assert env["NO_PROXY"] == "127.0.0.1,localhost" and env["PATH"] == "/bin"


def test_network_on_has_a_gateway_even_without_a_model(tmp_path: Path) -> None:
    with for_trial(_job(network=True), {"model": "m"}, run_dir=tmp_path, isolation=BwrapIsolation()) as gw:
        assert gw is not None and gw.gateway.routes == {} and gw.carries_network
        assert gw.args == {"model": "m"} and "HTTP_PROXY" in gw.scrub({})
    with for_trial(_job(network=True), {"model": "m"}, run_dir=tmp_path, isolation=select("none")) as gw:
        assert gw is None


def test_network_off_sets_no_proxy_variables(tmp_path: Path) -> None:
    with for_trial(
        _job(), {"base_url": "http://127.0.0.1:1"}, run_dir=tmp_path, isolation=BwrapIsolation()
    ) as gw:
        assert gw is not None and not gw.carries_network
        assert not any("proxy" in k.lower() for k in gw.scrub({"PATH": "/bin"}))


def test_network_off_allows_only_model_paths(tmp_path: Path) -> None:
    with for_trial(
        _job(), {"base_url": "http://127.0.0.1:1"}, run_dir=tmp_path, isolation=BwrapIsolation()
    ) as gw:
        assert gw is not None
        proxy = Proxy(gw.gateway.routes, tmp_path / "x.jsonl")
        assert proxy.match("POST", "/model/v1/messages")[2] == ""
        assert proxy.match("POST", "/model/chat/completions")[2] == ""
        assert proxy.match("GET", "/model/admin")[2] != ""
        assert proxy.match("HEAD", "/model")[2] == ""
        assert gw.gateway.routes["model"].paths == MODEL_PATHS
