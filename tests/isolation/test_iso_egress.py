"""Network on, through the gateway only: a sandbox in its own network namespace reaches the
host's loopback (the stand-in for the internet) only as the gateway's proxy traffic, logged.

Under `network: off` the same attempts are refused by the gateway and logged too.
"""

from __future__ import annotations

import http.server
import json
import shutil
import socket
import socketserver
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.gateway import DEFAULT_PORT, Gateway, GatewayRecord, read_log
from harness.gateway.model_route import proxy_env
from tests.isolation.conftest import PYTHON, Trial

pytestmark = pytest.mark.isolation

CLIENT = """
import http.client, json, os, socket
from urllib.parse import urlsplit
proxy = urlsplit(os.environ["HTTPS_PROXY"])
out = {}
conn = http.client.HTTPConnection(proxy.hostname, proxy.port, timeout=10)
conn.request("GET", "http://127.0.0.1:%s/hello" % os.environ["WEB_PORT"])
resp = conn.getresponse()
out["http"] = [resp.status, resp.read().decode()]
s = socket.create_connection((proxy.hostname, proxy.port), timeout=10)
s.sendall(b"CONNECT 127.0.0.1:%s HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\n\\r\\n" % os.environ["ECHO_PORT"].encode())
head = b""
while b"\\r\\n\\r\\n" not in head:
    data = s.recv(1)
    if not data:
        break
    head += data
out["connect"] = int(head.split(b" ")[1])
if out["connect"] == 200:
    s.sendall(b"ping through the tunnel")
    s.shutdown(socket.SHUT_WR)
    got = b""
    while data := s.recv(4096):
        got += data
    out["echo"] = got.decode()
s.close()
d = socket.socket(); d.settimeout(2)
try:
    d.connect(("127.0.0.1", int(os.environ["WEB_PORT"]))); out["direct"] = "reached"
except OSError:
    out["direct"] = "blocked"
print(json.dumps(out))
"""


class _Web(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = f"hello from the host {self.path}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        while data := self.request.recv(4096):
            self.request.sendall(data)


class _TCP(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


@pytest.fixture
def host_servers() -> Iterator[tuple[int, int]]:
    """An HTTP server and a TCP echo server on the host's 127.0.0.1: (web port, echo port)."""
    web = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Web)
    echo = _TCP(("127.0.0.1", 0), _Echo)
    for server in (web, echo):
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
    try:
        yield web.server_address[1], echo.server_address[1]
    finally:
        for server in (web, echo):
            server.shutdown()
            server.server_close()


def _run(
    trial: Trial, ports: tuple[int, int], *, open_network: bool, curl: bool = False
) -> tuple[dict[str, object], list[GatewayRecord]]:
    gw_dir = trial.root / "gw"
    log = trial.root / "run" / "gateway.jsonl"
    env = {**proxy_env(DEFAULT_PORT), "WEB_PORT": str(ports[0]), "ECHO_PORT": str(ports[1])}
    with Gateway(gw_dir, [], log_path=log, open_network=open_network) as gw:
        argv = [PYTHON, "-c", CLIENT]
        if curl:  # `--noproxy ''`: the target is 127.0.0.1, which NO_PROXY otherwise sends direct
            argv = ["/bin/sh", "-c", f"curl -s -S --noproxy '' http://127.0.0.1:{ports[0]}/by-curl"]
        out = trial.run(trial.spec(gw.wrap_argv(argv), mounts=(gw.mount(),), env=env, network=False))
        records = gw.records()
    assert out.returncode == (0 if open_network or not curl else out.returncode), out.stderr
    return (json.loads(out.stdout) if not curl else {"curl": out.stdout, "rc": out.returncode}), records


def _rows(records: list[GatewayRecord]) -> list[tuple[str, str | None, int | None, bool, int]]:
    return [(r.method, r.host, r.port, r.allowed, r.status) for r in records]


def test_network_on_reaches_the_host_only_through_the_gateway(
    trial: Trial, host_servers: tuple[int, int]
) -> None:
    web, echo = host_servers
    seen, records = _run(trial, host_servers, open_network=True)
    assert seen == {
        "http": [200, "hello from the host /hello"],
        "connect": 200,
        "echo": "ping through the tunnel",
        "direct": "blocked",
    }
    assert _rows(records) == [("GET", "127.0.0.1", web, True, 200), ("CONNECT", "127.0.0.1", echo, True, 200)]
    http_row, tunnel = records
    assert http_row.response_bytes == len("hello from the host /hello") and http_row.duration_s >= 0
    assert (tunnel.request_bytes, tunnel.response_bytes) == (len("ping through the tunnel"),) * 2


def test_network_off_refuses_the_same_attempts_and_logs_them(
    trial: Trial, host_servers: tuple[int, int]
) -> None:
    web, echo = host_servers
    seen, records = _run(trial, host_servers, open_network=False)
    assert seen == {"http": [403, seen["http"][1]], "connect": 403, "direct": "blocked"}  # type: ignore[index]
    assert "refused" in str(seen["http"])
    assert _rows(records) == [
        ("GET", "127.0.0.1", web, False, 403),
        ("CONNECT", "127.0.0.1", echo, False, 403),
    ]
    assert all(r.reason for r in records)


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
@pytest.mark.parametrize("open_network", [True, False])
def test_curl_uses_the_proxy_environment(
    trial: Trial, host_servers: tuple[int, int], open_network: bool
) -> None:
    seen, records = _run(trial, host_servers, open_network=open_network, curl=True)
    if open_network:
        assert seen["curl"] == "hello from the host /by-curl"
    else:
        assert "hello" not in str(seen["curl"])
    assert _rows(records) == [
        ("GET", "127.0.0.1", host_servers[0], open_network, 200 if open_network else 403)
    ]


def test_gateway_folder_holds_no_other_socket(tmp_path: Path) -> None:
    with Gateway(tmp_path / "gw", [], log_path=tmp_path / "g.jsonl", open_network=True) as gw:
        assert sorted(p.name for p in gw.folder.iterdir()) == ["forward.py", "gateway.sock"]
        assert read_log(gw.log_path) == []
        with socket.socket(socket.AF_UNIX) as s:
            s.connect(str(gw.socket_path))
