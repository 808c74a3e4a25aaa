"""The gateway's request handler: allowlist, key injection, streaming relay, usage, log."""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from harness.gateway import egress
from harness.gateway.budget import Meter, protocol_of, refusal
from harness.gateway.log import GatewayRecord, LogWriter, dumps
from harness.gateway.usage import UsageReader

if TYPE_CHECKING:
    from harness.gateway import Route

HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "trailers",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
        "accept-encoding",
    }
)
UPSTREAM_TIMEOUT_S = 900.0
MAX_BODY = 64 * 1024 * 1024


class Proxy:
    """Routes and the log, shared by every connection."""

    def __init__(
        self,
        routes: Mapping[str, Route],
        log_path: Path,
        *,
        open_network: bool = False,
        meter: Meter | None = None,
    ) -> None:
        self.routes = routes
        self.log = LogWriter(log_path)
        self.open_network = open_network
        """`network: on`: CONNECT tunnels and absolute-URI requests are carried (see `egress`)."""
        self.meter = meter
        """The trial's budgets, when it has any: model requests past them are refused."""
        self.closed = threading.Event()
        """Set when the gateway stops: releases the requests held after a budget stop."""

    def match(self, method: str, path: str) -> tuple[Route | None, str, str]:
        """(route, upstream path, refusal reason); the reason is empty when allowed."""
        parts = urlsplit(path)
        name, _, rest = parts.path.lstrip("/").partition("/")
        route = self.routes.get(name)
        rest = "/" + rest
        if route is None and "" in self.routes:
            route, rest = self.routes[""], parts.path
        if route is None:
            return None, "", f"no model route for {parts.path!r}"
        if method == "HEAD" and rest == "/":
            pass  # a client's reachability probe of its base URL (Claude Code sends one): harmless
        elif method not in route.methods:
            return route, "", f"method {method} not allowed on route {route.name!r}"
        elif route.paths is not None and not any(rest.startswith(prefix) for prefix in route.paths):
            return route, "", f"path {rest!r} not in the allowlist of route {route.name!r}"
        base = urlsplit(route.upstream).path.rstrip("/")
        return route, base + rest + (f"?{parts.query}" if parts.query else ""), ""


class Handler(BaseHTTPRequestHandler):
    """One agent connection; keep-alive, every response framed by length or chunks."""

    proxy: Proxy
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet: gateway.jsonl is the record
        pass

    def address_string(self) -> str:
        return "sandbox"

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return bytes(out)
                out += self.rfile.read(size)
                self.rfile.readline()
                if len(out) > MAX_BODY:
                    raise ValueError("request body too large")
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            raise ValueError("request body too large")
        return self.rfile.read(length) if length else b""

    def _reply(
        self, status: int, data: dict[str, Any], record: Callable[[int], None], *, hold: float = 0.0
    ) -> None:
        """Send a small JSON answer, logging it first so the log is complete when the agent reads it.

        hold: seconds to wait before answering unless the gateway closes first (a session being
        ended after a budget stop: an agent that keeps asking is not answered, and logged, again
        and again while the harness ends it)."""
        payload = dumps(data).encode()
        record(len(payload))
        if hold > 0:
            self.proxy.closed.wait(hold)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _handle(self) -> None:
        started, clock = time.time(), time.monotonic()
        body = self._body()
        if self.path.startswith(("http://", "https://")):  # a forward-proxy request, never a model route
            egress.forward(self, body)
            return
        route, upstream_path, reason = self.proxy.match(self.command, self.path)
        requested_model = _model_of(body)
        fields: dict[str, Any] = {
            "t": started,
            "method": self.command,
            "path": self.path,
            "route": route.name if route else None,
            "request_bytes": len(body),
        }
        if reason:
            self._reply(
                403,
                {"type": "error", "error": {"type": "gateway_refused", "message": reason}},
                lambda sent: self.proxy.log.write(
                    GatewayRecord(
                        **fields,
                        allowed=False,
                        reason=reason,
                        status=403,
                        response_bytes=sent,
                        duration_s=time.monotonic() - clock,
                        model=requested_model,
                    )
                ),
            )
            return
        assert route is not None
        protocol = protocol_of(self.command, self.path)
        meter = self.proxy.meter if protocol != "other" else None
        refused = meter.admit() if meter is not None else None
        if refused is not None and meter is not None:
            status, answer = refusal(protocol, refused.message)
            self._reply(
                status,
                answer,
                hold=meter.hold_s if meter.stop.is_set() else 0.0,
                record=lambda sent: self.proxy.log.write(
                    GatewayRecord(
                        **fields,
                        allowed=False,
                        reason=refused.message,
                        limit=refused.limit,
                        status=status,
                        response_bytes=sent,
                        duration_s=time.monotonic() - clock,
                        model=requested_model,
                    )
                ),
            )
            return
        target = urlsplit(route.upstream)
        conn_cls = http.client.HTTPSConnection if target.scheme == "https" else http.client.HTTPConnection
        conn = conn_cls(target.hostname or "", target.port, timeout=UPSTREAM_TIMEOUT_S)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
        if route.headers:
            headers = {k: v for k, v in headers.items() if k.lower() not in route.strip}
            headers.update(route.headers)
        headers.update(
            {"Host": target.netloc, "Accept-Encoding": "identity", "Content-Length": str(len(body))}
        )
        url = f"{route.upstream.rstrip('/')}{upstream_path[len(target.path.rstrip('/')) :]}"
        try:
            conn.request(self.command, upstream_path, body=body, headers=headers)
            resp = conn.getresponse()
        except OSError as exc:
            conn.close()
            problem = str(exc)
            self._reply(
                502,
                {"type": "error", "error": {"type": "gateway_upstream", "message": problem}},
                lambda sent: self.proxy.log.write(
                    GatewayRecord(
                        **fields,
                        allowed=True,
                        upstream=url,
                        reason=f"upstream: {problem}",
                        status=502,
                        response_bytes=sent,
                        duration_s=time.monotonic() - clock,
                        model=requested_model,
                    )
                ),
            )
            return
        reader = UsageReader(resp.getheader("Content-Type") or "")

        def finish(sent: int, error: str = "") -> None:
            usage, model = reader.finish(), reader.model or requested_model
            if meter is not None:
                meter.record(usage, model)
            self.proxy.log.write(
                GatewayRecord(
                    **fields,
                    allowed=True,
                    upstream=url,
                    status=resp.status,
                    stream=reader.stream,
                    response_bytes=sent,
                    duration_s=time.monotonic() - clock,
                    model=model,
                    usage=usage,
                    reason=error,
                )
            )

        try:
            self._relay(resp, reader, finish)
        finally:
            conn.close()

    def _relay(
        self, resp: http.client.HTTPResponse, reader: UsageReader, finish: Callable[..., None]
    ) -> None:
        """Relay the response; `finish` logs it before the agent can see the response end."""
        length = resp.getheader("Content-Length")
        chunked = length is None and self.command != "HEAD"
        self.send_response(resp.status, resp.reason)
        for key, value in resp.getheaders():
            if key.lower() not in HOP_BY_HOP:
                self.send_header(key, value)
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        elif length is not None:
            self.send_header("Content-Length", length)
        self.end_headers()
        sent, total, logged = 0, int(length) if length is not None else -1, False
        try:
            while chunk := resp.read1(65536):
                reader.feed(chunk)
                sent += len(chunk)
                if sent == total:
                    finish(sent)
                    logged = True
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk) if chunked else chunk)
                self.wfile.flush()
        except OSError as exc:  # the agent went away mid-response: still a request to account for
            if not logged:
                finish(sent, f"relay interrupted: {exc}")
            self.close_connection = True
            return
        if not logged:
            finish(sent)
        if chunked:
            self.wfile.write(b"0\r\n\r\n")

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _handle

    def do_CONNECT(self) -> None:
        egress.tunnel(self)


def _model_of(body: bytes) -> str | None:
    try:
        data = json.loads(body) if body[:1] == b"{" else None
    except (ValueError, RecursionError):  # not JSON, not UTF-8, nested too deeply: no model named
        return None
    model = data.get("model") if isinstance(data, dict) else None
    return model if isinstance(model, str) else None
