"""Budgets at the gateway, against the real scripted model server on the gateway's real Unix socket:
what is counted, each provider's refusal, and when the session is ended."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.artifacts.prices import PriceTable
from harness.gateway import Gateway, Meter, Route, read_log, usage_totals
from harness.modelserver import Script, ScriptedModelServer
from tests.gateway.test_gateway import call

REQUESTS: dict[str, tuple[str, dict[str, Any]]] = {
    "anthropic": (
        "/m/v1/messages",
        {"model": "m1", "max_tokens": 50, "messages": [{"role": "user", "content": "go"}]},
    ),
    "chat": ("/m/v1/chat/completions", {"model": "m1", "messages": [{"role": "user", "content": "go"}]}),
    "responses": ("/m/v1/responses", {"model": "m1", "input": "go"}),
    "gemini": (
        "/m/v1beta/models/m1:generateContent",
        {"contents": [{"role": "user", "parts": [{"text": "go"}]}]},
    ),
}


@pytest.fixture
def model(tmp_path: Path) -> Iterator[ScriptedModelServer]:
    script = Script.model_validate({"model": "m1", "tools_required": False, "steps": [{"text": "Working."}]})
    with ScriptedModelServer(script, log_path=tmp_path / "model.jsonl") as server:
        yield server


def _gateway(tmp_path: Path, model: ScriptedModelServer, meter: Meter) -> Gateway:
    route = Route("m", model.url, paths=("/v1/", "/v1beta/"))
    return Gateway(tmp_path / "gw", [route], log_path=tmp_path / "gateway.jsonl", meter=meter)


@pytest.mark.parametrize("protocol", sorted(REQUESTS))
def test_a_spent_budget_gets_the_providers_own_refusal(
    tmp_path: Path, model: ScriptedModelServer, protocol: str
) -> None:
    path, body = REQUESTS[protocol]
    meter = Meter({"total_tokens": 1}, None, hold_s=0)
    with _gateway(tmp_path, model, meter) as gw:
        assert call(gw, "POST", path, body)[0] == 200  # under budget: forwarded, its usage counted
        assert meter.spent["total_tokens"] > 1 and not meter.stop.is_set()
        status, raw = call(gw, "POST", path, body)
        refused = json.loads(raw)
        assert not meter.stop.is_set()  # one refusal: the agent may still stop by itself
        assert call(gw, "POST", path, body)[0] == status
        assert meter.stop.is_set()  # it asked again: the harness ends the session
    expected = {
        "anthropic": (
            400,
            refused.get("error", {}).get("type") == "invalid_request_error" and refused["type"] == "error",
        ),
        "chat": (429, refused.get("error", {}).get("code") == "insufficient_quota"),
        "responses": (429, refused.get("error", {}).get("type") == "insufficient_quota"),
        "gemini": (429, refused.get("error", {}).get("status") == "RESOURCE_EXHAUSTED"),
    }[protocol]
    assert (status, True) == expected, refused
    assert "total_tokens budget" in json.dumps(refused)
    assert len(model.records()) == 1  # the refused requests never reached the provider
    log = read_log(tmp_path / "gateway.jsonl")
    assert [(r.allowed, r.limit) for r in log] == [
        (True, None),
        (False, "total_tokens"),
        (False, "total_tokens"),
    ]
    assert "budget" in log[1].reason and log[1].status == status
    assert usage_totals(tmp_path / "gateway.jsonl")["refused"] == 2
    assert meter.summary()["hit"] == ["total_tokens"] and meter.summary()["refused"] == 2


def test_each_budget_counts_its_own_kind(tmp_path: Path, model: ScriptedModelServer) -> None:
    path, body = REQUESTS["anthropic"]
    meter = Meter({"model_requests": 2, "output_tokens": 10_000, "input_tokens": 10_000}, None, hold_s=0)
    with _gateway(tmp_path, model, meter) as gw:
        assert [call(gw, "POST", path, body)[0] for _ in range(3)] == [200, 200, 400]
        assert call(gw, "GET", "/m/v1/models")[0] == 200  # not a generation: neither counted nor refused
    served = model.records()
    assert meter.spent["model_requests"] == 2 and meter.hit == ["model_requests"]
    assert meter.spent["input_tokens"] == sum(r.input_tokens for r in served[:2])
    assert meter.spent["output_tokens"] == sum(r.output_tokens for r in served[:2])


def test_money_is_priced_from_the_table_and_an_unpriced_model_stops_at_once(
    tmp_path: Path, model: ScriptedModelServer
) -> None:
    path, body = REQUESTS["chat"]
    table = PriceTable("t1", {"m1": {"input": 1_000_000.0, "output": 2_000_000.0}})  # $1 / $2 per token
    meter = Meter({"cost_usd": 10_000.0}, table)
    with _gateway(tmp_path, model, meter) as gw:
        assert call(gw, "POST", path, body)[0] == 200
    (served,) = model.records()
    assert meter.spent["cost_usd"] == pytest.approx(served.input_tokens * 1.0 + served.output_tokens * 2.0)
    other = PriceTable("t1", {"other": {"input": 1.0, "output": 1.0}})
    unpriced = Meter({"cost_usd": 10_000.0}, other, hold_s=0)
    with _gateway(tmp_path / "b", model, unpriced) as gw:
        assert call(gw, "POST", path, body)[0] == 200
        assert call(gw, "POST", path, body)[0] == 429
    assert unpriced.problem and "m1 is not priced" in unpriced.problem
    assert unpriced.stop.is_set() and unpriced.hit == []  # the harness's problem, not a spent budget


def test_an_agent_that_neither_stops_nor_asks_is_ended_after_the_grace(
    tmp_path: Path, model: ScriptedModelServer
) -> None:
    path, body = REQUESTS["responses"]
    meter = Meter({"total_tokens": 1}, None, grace_s=0.05)
    with _gateway(tmp_path, model, meter) as gw:
        call(gw, "POST", path, body)
        assert call(gw, "POST", path, body)[0] == 429
        assert meter.stop.wait(timeout=30)


def test_a_request_after_the_stop_waits_for_the_session_to_end(
    tmp_path: Path, model: ScriptedModelServer
) -> None:
    path, body = REQUESTS["chat"]
    meter = Meter({"model_requests": 1}, None, hold_s=60)
    answers: list[int] = []
    gw = _gateway(tmp_path, model, meter).start()
    try:
        call(gw, "POST", path, body)
        call(gw, "POST", path, body)  # refused at once
        held = threading.Thread(target=lambda: answers.append(call(gw, "POST", path, body)[0]))
        held.start()
        held.join(timeout=2.0)  # without the hold it is answered at once
        assert held.is_alive() and answers == [] and meter.stop.is_set()
        assert len(read_log(tmp_path / "gateway.jsonl")) == 3  # logged before it is held
    finally:
        gw.stop()  # the session is over: the held request is answered (or finds its agent gone)
    held.join(30)
    assert answers == [429]
