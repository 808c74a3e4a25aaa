"""The gateway as an HTTP forward proxy: the sandbox's only way out under `network: on`.

Under `network: on` the sandbox keeps its own network namespace (loopback only), exactly as
under `off`; the agent's `HTTP(S)_PROXY` point at the in-sandbox forwarder, so every
connection it makes to the outside arrives here as a `CONNECT host:port` tunnel (HTTPS and
anything else over TCP) or an absolute-URI plain HTTP request, and is carried with an open
allowlist. Under `off` both are refused. Either way each one is a row of `gateway.jsonl`:
method, host, port, bytes up and down, status, duration, refused ones included.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from harness.gateway.log import GatewayRecord
from harness.gateway.usage import UsageReader

if TYPE_CHECKING:
    from harness.gateway.proxy import Handler

CONNECT_TIMEOUT_S = 30.0
IDLE_TIMEOUT_S = 900.0
SETTLE_S = 0.5
"""How long a tunnel whose target closed waits for the client's last bytes before it is logged."""
REFUSED_OFF = "network: off: the gateway carries only the model routes"
PROXY_HEADERS = frozenset({"proxy-connection", "proxy-authorization", "proxy-authenticate"})


def _host_port(authority: str, default: int) -> tuple[str, int]:
    host, sep, port = authority.rpartition(":")
    if not sep or not port.isdigit() or (host.count(":") and not host.startswith("[")):
        host, port = authority, str(default)
    return host.strip("[]"), int(port)


def _record(handler: Handler, clock: float, started: float, **fields: Any) -> None:
    handler.proxy.log.write(
        GatewayRecord(
            t=started,
            duration_s=time.monotonic() - clock,
            method=handler.command,
            path=handler.path,
            route=None,
            **fields,
        )
    )


def _refuse(handler: Handler, status: int, reason: str, clock: float, started: float, **fields: Any) -> None:
    handler.close_connection = True
    handler._reply(
        status,
        {"type": "error", "error": {"type": "gateway_refused", "message": reason}},
        lambda sent: _record(
            handler,
            clock,
            started,
            allowed=False,
            reason=reason,
            status=status,
            response_bytes=sent,
            **fields,
        ),
    )


def _pump(read: Any, write: Any, counter: list[int]) -> None:
    try:
        while data := read(65536):
            write(data)
            counter[0] += len(data)
    except OSError:
        pass


def tunnel(handler: Handler) -> None:
    """`CONNECT host:port`: a byte pipe to the target when the allowlist is open, else refused."""
    started, clock = time.time(), time.monotonic()
    host, port = _host_port(handler.path, 443)
    where = {"host": host, "port": port}
    if not handler.proxy.open_network:
        _refuse(handler, 403, f"CONNECT tunnels are refused ({REFUSED_OFF})", clock, started, **where)
        return
    try:
        upstream = socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S)
    except OSError as exc:
        _refuse(handler, 502, f"upstream: {exc}", clock, started, **where)
        return
    handler.close_connection = True
    upstream.settimeout(IDLE_TIMEOUT_S)
    handler.send_response(200, "Connection Established")
    handler.end_headers()
    handler.wfile.flush()
    up, down = [0], [0]

    def client_to_target() -> None:
        _pump(handler.rfile.read1, upstream.sendall, up)
        with contextlib.suppress(OSError):
            upstream.shutdown(socket.SHUT_WR)

    sender = threading.Thread(target=client_to_target, daemon=True, name="assay-gateway-tunnel")
    sender.start()
    _pump(upstream.recv, handler.connection.sendall, down)
    sender.join(SETTLE_S)  # usually done already: the client half-closed first
    # Logged before the client sees the tunnel end, so the log is complete when the agent is.
    _record(
        handler,
        clock,
        started,
        allowed=True,
        upstream=f"{host}:{port}",
        status=200,
        request_bytes=up[0],
        response_bytes=down[0],
        **where,
    )
    with contextlib.suppress(OSError):
        handler.connection.shutdown(socket.SHUT_RDWR if sender.is_alive() else socket.SHUT_WR)
    sender.join(SETTLE_S)
    upstream.close()


def forward(handler: Handler, body: bytes) -> None:
    """An absolute-URI request (`GET http://host/path`): relayed when the allowlist is open, else refused."""
    started, clock = time.time(), time.monotonic()
    parts = urlsplit(handler.path)
    try:
        host, port = parts.hostname or "", parts.port or 80
    except ValueError:
        host, port = parts.netloc, 0
    where = {"host": host, "port": port, "request_bytes": len(body)}
    if not handler.proxy.open_network:
        _refuse(handler, 403, f"proxy requests are refused ({REFUSED_OFF})", clock, started, **where)
        return
    if parts.scheme != "http" or not host:
        _refuse(
            handler,
            400,
            f"only http:// URLs are forwarded as requests (use CONNECT): {parts.scheme}",
            clock,
            started,
            **where,
        )
        return
    from harness.gateway.proxy import HOP_BY_HOP  # here: proxy imports this module

    headers = {k: v for k, v in handler.headers.items() if k.lower() not in HOP_BY_HOP | PROXY_HEADERS}
    headers.update({"Host": parts.netloc, "Content-Length": str(len(body))})
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    conn = http.client.HTTPConnection(host, port, timeout=CONNECT_TIMEOUT_S)
    try:
        conn.request(handler.command, target, body=body, headers=headers)
        resp = conn.getresponse()
    except OSError as exc:
        conn.close()
        _refuse(handler, 502, f"upstream: {exc}", clock, started, **where)
        return

    def finish(sent: int, error: str = "") -> None:
        _record(
            handler,
            clock,
            started,
            allowed=True,
            upstream=handler.path,
            status=resp.status,
            response_bytes=sent,
            reason=error,
            **where,
        )

    try:
        handler._relay(resp, UsageReader(""), finish)
    finally:
        conn.close()
