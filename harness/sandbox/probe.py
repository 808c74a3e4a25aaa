"""A listener on the host's loopback that proves whether a sandbox can reach out.

"Network off" is proven without sending a packet off the machine: the harness opens this
listener on the host's 127.0.0.1 (a port of its own), and the sandbox, which has a network
namespace of its own, tries to reach it. Under `off` nothing may arrive — the listener
counts every connection, so a probe that lies about its exit status is caught too; under
`on` the answer must come back (through the model gateway's proxy, the sandbox's only way
out). The probe runs inside with the harness's own interpreter (always in the sandbox's view),
without site and with only `socket`: it is a Python start in every trial.

    with LoopbackProbe() as probe:
        launcher.shell(probe.command())            # exit 0 only when the token came back
        probe.connections                          # 0 under network: off
"""

from __future__ import annotations

import http.server
import os
import secrets
import selectors
import shlex
import sys
import threading
from types import TracebackType

PROBE = r"""
import os, socket, sys
url, token = sys.argv[1], sys.argv[2]
proxy = os.environ.get("HTTP_PROXY") or os.environ.get("http_proxy")  # NO_PROXY ignored on purpose
target = url.split("://", 1)[-1].split("/", 1)[0]
host, _, port = (proxy or url).split("://", 1)[-1].split("/", 1)[0].rpartition(":")
head = f"GET {url if proxy else '/'} HTTP/1.0\r\nHost: {target}\r\nConnection: close\r\n\r\n"
try:
    with socket.create_connection((host.strip("[]"), int(port or 80)), timeout=5) as conn:
        conn.sendall(head.encode())
        reply = b""
        while b"\r\n\r\n" not in reply and (chunk := conn.recv(65536)):
            reply += chunk
        status, _, rest = reply.partition(b"\r\n")
        fields, _, body = rest.partition(b"\r\n\r\n")
        size = [int(v) for k, _, v in (f.partition(b":") for f in fields.split(b"\r\n")) if k.strip().lower() == b"content-length"]
        while (not size or len(body) < size[0]) and (chunk := conn.recv(65536)):
            body += chunk
    if len(status.split()) < 2 or not status.startswith(b"HTTP/"):
        raise ValueError(f"not an HTTP answer: {status[:80]!r}")
    body = body[: size[0]] if size else body
except Exception as exc:
    print(f"unreachable: {type(exc).__name__}: {exc}")
    sys.exit(1)
print("reached: " + body.decode(errors="replace")[:80])
sys.exit(0 if body == token.encode() else 2)
"""
"""Run inside the sandbox: exit 0 when the listener's token came back, 1 when unreachable."""


class LoopbackProbe:
    """An HTTP listener on 127.0.0.1:<free port> answering one secret token; counts connections."""

    def __init__(self) -> None:
        self.token = "assay-probe-" + secrets.token_hex(8)
        self.connections = 0
        self._lock = threading.Lock()
        probe = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = probe.token.encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True

            def verify_request(self, request: object, client_address: object) -> bool:
                with probe._lock:
                    probe.connections += 1
                return True

        self._server = Server(("127.0.0.1", 0), Handler)
        self._wake = os.pipe()
        self._thread = threading.Thread(target=self._serve, daemon=True, name="assay-probe")

    def _serve(self) -> None:
        """Answer connections until `close()` writes to the wake pipe. (`serve_forever` looks for a
        shutdown only every 0.5 s: `close()` waited up to that long, a quarter second per trial.)"""
        with selectors.DefaultSelector() as waiter:
            waiter.register(self._server, selectors.EVENT_READ)
            waiter.register(self._wake[0], selectors.EVENT_READ)
            while all(key.fileobj is self._server for key, _ in waiter.select()):
                self._server.handle_request()  # a connection is waiting: accepted at once

    @property
    def url(self) -> str:
        """Where the listener is, on the host's loopback."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/"

    def command(self) -> str:
        """The shell command a sandbox runs to try the listener."""
        # -I -S and a bare socket: no site, no http.client (their imports were most of a
        # trial's canary phase; the probe runs once per trial)
        return shlex.join([sys.executable, "-I", "-S", "-c", PROBE, self.url, self.token])

    def start(self) -> LoopbackProbe:
        """Start listening (in a daemon thread); returns self."""
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop listening and free the port (at once; idempotent)."""
        if self._wake[1] < 0:
            return
        os.write(self._wake[1], b"x")
        if self._thread.is_alive():
            self._thread.join()
        self._server.server_close()
        for fd in self._wake:
            os.close(fd)
        self._wake = (-1, -1)

    def __enter__(self) -> LoopbackProbe:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
