"""The gateway as a forward proxy, on its real Unix socket: CONNECT tunnels and absolute-URI
requests carried under `network: on`, refused under `off`, every one a row of the log."""

from __future__ import annotations

import http.server
import socket
import socketserver
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.gateway import Gateway, usage_totals


class _Web(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        reply = (
            b"got "
            + body
            + b" for "
            + self.path.encode()
            + b" proxy-header="
            + str("Proxy-Connection" in self.headers).encode()
        )
        self.send_response(201)
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, format: str, *args: object) -> None:
        pass


class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        while data := self.request.recv(4096):
            self.request.sendall(data.upper())


class _TCP(socketserver.ThreadingTCPServer):
    daemon_threads = True


@pytest.fixture
def servers() -> Iterator[tuple[int, int]]:
    web = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Web)
    echo = _TCP(("127.0.0.1", 0), _Echo)
    for server in (web, echo):
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
    yield web.server_address[1], echo.server_address[1]
    for server in (web, echo):
        server.shutdown()
        server.server_close()


def _exchange(gw: Gateway, raw: bytes, then: bytes = b"") -> bytes:
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(10)
        s.connect(str(gw.socket_path))
        s.sendall(raw)
        head = b""
        while b"\r\n\r\n" not in head and (data := s.recv(1)):
            head += data
        if then and head.startswith(b"HTTP/1.1 200"):
            s.sendall(then)
            s.shutdown(socket.SHUT_WR)
        rest = b""
        while data := s.recv(65536):
            rest += data
        return head + rest


@pytest.mark.parametrize("open_network", [True, False])
def test_tunnel_and_request(tmp_path: Path, servers: tuple[int, int], open_network: bool) -> None:
    web, echo = servers
    with Gateway(tmp_path / "gw", [], log_path=tmp_path / "gateway.jsonl", open_network=open_network) as gw:
        tunnel = _exchange(
            gw, b"CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: x\r\n\r\n" % echo, then=b"tunnelled bytes"
        )
        request = _exchange(
            gw,
            b"POST http://127.0.0.1:%d/p?q=1 HTTP/1.1\r\nHost: x\r\nProxy-Connection: close\r\n"
            b"Connection: close\r\nContent-Length: 4\r\n\r\nbody" % web,
        )
        records = gw.records()
    rows = [(r.method, r.host, r.port, r.allowed, r.status) for r in records]
    if open_network:
        assert tunnel.endswith(b"\r\n\r\nTUNNELLED BYTES")
        assert request.startswith(b"HTTP/1.1 201") and request.endswith(
            b"got body for /p?q=1 proxy-header=False"
        )
        assert rows == [("CONNECT", "127.0.0.1", echo, True, 200), ("POST", "127.0.0.1", web, True, 201)]
        assert (records[0].request_bytes, records[0].response_bytes) == (15, 15)
        assert (records[1].request_bytes, records[1].upstream) == (4, f"http://127.0.0.1:{web}/p?q=1")
        assert usage_totals(gw.log_path)["refused"] == 0
    else:
        assert tunnel.startswith(b"HTTP/1.1 403") and b"TUNNELLED" not in tunnel
        assert request.startswith(b"HTTP/1.1 403") and b"got body" not in request
        assert rows == [("CONNECT", "127.0.0.1", echo, False, 403), ("POST", "127.0.0.1", web, False, 403)]
        assert all("network: off" in r.reason for r in records)
        assert usage_totals(gw.log_path)["refused"] == 2


def test_unreachable_target_and_https_request_are_logged(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        dead = probe.getsockname()[1]
    with Gateway(tmp_path / "gw", [], log_path=tmp_path / "gateway.jsonl", open_network=True) as gw:
        assert _exchange(gw, b"CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n" % dead).startswith(b"HTTP/1.1 502")
        assert _exchange(
            gw, b"GET https://127.0.0.1:%d/ HTTP/1.1\r\nConnection: close\r\n\r\n" % dead
        ).startswith(b"HTTP/1.1 400")
        records = gw.records()
    assert [(r.method, r.port, r.allowed, r.status) for r in records] == [
        ("CONNECT", dead, False, 502),
        ("GET", dead, False, 400),
    ]
