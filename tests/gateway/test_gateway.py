"""The model gateway against the real scripted model server, on its real Unix socket."""

from __future__ import annotations

import http.client
import http.server
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.gateway import PLACEHOLDER_KEY, Gateway, Route, read_log, usage_totals
from harness.modelserver import Script, ScriptedModelServer

SCRIPT = {
    "model": "m1",
    "steps": [
        {"text": "Creating it.", "tool_calls": [{"name": "Bash", "arguments": {"command": "echo hi > a"}}]},
        {"text": "Done."},
    ],
}
TOOL = {"name": "Bash", "description": "run", "input_schema": {"type": "object"}}
FN = {"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}


class UnixHTTPConnection(http.client.HTTPConnection):
    """An HTTP client over the gateway's Unix socket (what the in-sandbox forwarder reaches)."""

    def __init__(self, path: Path) -> None:
        super().__init__("localhost", timeout=10)
        self._path = str(path)

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self._path)


def call(
    gw: Gateway,
    method: str,
    path: str,
    body: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, bytes]:
    conn = UnixHTTPConnection(gw.socket_path)
    payload = json.dumps(body).encode() if body is not None else None
    conn.request(method, path, body=payload, headers={"Content-Type": "application/json", **(headers or {})})
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp.status, data


@pytest.fixture
def model(tmp_path: Path) -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer(Script.model_validate(SCRIPT), log_path=tmp_path / "model.jsonl") as server:
        yield server


@pytest.fixture
def gateway(tmp_path: Path, model: ScriptedModelServer) -> Iterator[Gateway]:
    routes = [Route("anthropic", model.url), Route("openai", model.url, paths=("/v1/chat/", "/v1/responses"))]
    with Gateway(tmp_path / "gw", routes, log_path=tmp_path / "gateway.jsonl") as gw:
        yield gw


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_usage_is_recorded_exactly(
    gateway: Gateway, model: ScriptedModelServer, stream: bool
) -> None:
    body = {
        "model": "claude-x",
        "max_tokens": 50,
        "tools": [TOOL],
        "stream": stream,
        "messages": [{"role": "user", "content": "go"}],
    }
    status, raw = call(gateway, "POST", "/anthropic/v1/messages?beta=true", body)
    assert status == 200
    if stream:
        assert b"message_stop" in raw
    (served,) = model.records()
    (seen,) = gateway.records()
    assert seen.allowed and seen.status == 200 and seen.stream is stream and seen.route == "anthropic"
    assert seen.usage is not None
    assert (seen.usage.input_tokens, seen.usage.output_tokens) == (served.input_tokens, served.output_tokens)
    assert seen.model == "m1" or seen.model == "claude-x"
    assert seen.response_bytes == len(raw)


@pytest.mark.parametrize("path", ["/openai/v1/chat/completions", "/openai/v1/responses"])
@pytest.mark.parametrize("stream", [False, True])
def test_openai_usage_is_recorded_exactly(
    gateway: Gateway, model: ScriptedModelServer, path: str, stream: bool
) -> None:
    if "responses" in path:
        body: dict[str, Any] = {
            "model": "gpt-x",
            "input": "go",
            "stream": stream,
            "tools": [{"type": "function", "name": "bash", "parameters": {"type": "object"}}],
        }
    else:
        body = {
            "model": "gpt-x",
            "messages": [{"role": "user", "content": "go"}],
            "tools": [FN],
            "stream": stream,
            "stream_options": {"include_usage": True},
        }
    status, _ = call(gateway, "POST", path, body)
    assert status == 200
    (served,) = model.records()
    (seen,) = gateway.records()
    assert seen.usage is not None, seen
    assert seen.usage.input_tokens + seen.usage.cache_read_tokens == served.input_tokens
    assert seen.usage.output_tokens == served.output_tokens


def test_everything_else_is_refused_and_logged(gateway: Gateway, model: ScriptedModelServer) -> None:
    assert call(gateway, "GET", "/anthropic/admin/keys")[0] == 403
    assert call(gateway, "POST", "/elsewhere/v1/messages", {"x": 1})[0] == 403
    assert call(gateway, "DELETE", "/anthropic/v1/messages")[0] == 403
    assert model.records() == []
    log = gateway.records()
    assert [r.allowed for r in log] == [False, False, False]
    assert all(r.upstream is None and r.reason for r in log)
    assert usage_totals(gateway.log_path)["refused"] == 3


def test_socket_folder_holds_only_socket_and_forwarder(gateway: Gateway) -> None:
    assert sorted(p.name for p in gateway.folder.iterdir()) == ["forward.py", "gateway.sock"]
    assert gateway.mount().writable is False


def test_key_is_injected_by_the_gateway_not_the_agent(tmp_path: Path) -> None:
    seen: list[dict[str, str]] = []

    class Echo(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            seen.append({k.lower(): v for k, v in self.headers.items()})
            payload = b'{"usage": {"input_tokens": 7, "output_tokens": 3}}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: object) -> None:
            pass

    upstream = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    try:
        route = Route(
            "anthropic",
            f"http://127.0.0.1:{upstream.server_address[1]}",
            headers={"x-api-key": "real-secret"},
        )
        with Gateway(tmp_path / "gw", [route], log_path=tmp_path / "g.jsonl") as gw:
            status, _ = call(
                gw,
                "POST",
                "/anthropic/v1/messages",
                {"model": "m"},
                headers={"x-api-key": PLACEHOLDER_KEY, "Authorization": "Bearer agent-guess"},
            )
    finally:
        upstream.shutdown()
        upstream.server_close()
    assert status == 200
    assert seen[0]["x-api-key"] == "real-secret"
    assert "authorization" not in seen[0]
    assert usage_totals(tmp_path / "g.jsonl")["input_tokens"] == 7


def test_upstream_down_is_a_502_not_a_crash(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with Gateway(
        tmp_path / "gw", [Route("m", f"http://127.0.0.1:{port}")], log_path=tmp_path / "g.jsonl"
    ) as gw:
        assert call(gw, "POST", "/m/v1/messages", {"model": "x"})[0] == 502
    (record,) = read_log(tmp_path / "g.jsonl")
    assert record.status == 502 and record.reason.startswith("upstream")


def test_gateway_refuses_a_folder_with_other_files(tmp_path: Path) -> None:
    folder = tmp_path / "gw"
    folder.mkdir()
    (folder / "agent.sock").write_text("")
    with pytest.raises(ValueError, match="must hold nothing else"):
        Gateway(folder, [Route("m", "http://127.0.0.1:1")], log_path=tmp_path / "g.jsonl").start()
