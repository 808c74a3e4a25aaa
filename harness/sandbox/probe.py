"""A listener on the host's loopback that proves whether a sandbox can reach out.

"Network off" is proven without sending a packet off the machine: the harness opens this
listener on the host's 127.0.0.1 (a port of its own), and the sandbox, which has a network
namespace of its own, tries to reach it. Under `off` nothing may arrive — the listener
counts every connection, so a probe that lies about its exit status is caught too; under
`on` the answer must come back (through the model gateway's proxy, the sandbox's only way
out). The probe runs inside with the harness's own interpreter (always in the sandbox's view).

    with LoopbackProbe() as probe:
        launcher.shell(probe.command())            # exit 0 only when the token came back
        probe.connections                          # 0 under network: off
"""

from __future__ import annotations

import http.server
import secrets
import shlex
import sys
import threading
from types import TracebackType

PROBE = r"""
import http.client, os, sys, urllib.parse
url, token = sys.argv[1], sys.argv[2]
proxy = os.environ.get("HTTP_PROXY") or os.environ.get("http_proxy")  # NO_PROXY ignored on purpose
via = urllib.parse.urlsplit(proxy or url)
try:
    conn = http.client.HTTPConnection(via.hostname, via.port, timeout=5)
    conn.request("GET", url if proxy else "/")
    body = conn.getresponse().read().decode(errors="replace")
except Exception as exc:
    print(f"unreachable: {type(exc).__name__}: {exc}")
    sys.exit(1)
print("reached: " + body[:80])
sys.exit(0 if body == token else 2)
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
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True, name="assay-probe")

    @property
    def url(self) -> str:
        """Where the listener is, on the host's loopback."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/"

    def command(self) -> str:
        """The shell command a sandbox runs to try the listener."""
        return shlex.join([sys.executable, "-c", PROBE, self.url, self.token])

    def start(self) -> LoopbackProbe:
        """Start listening (in a daemon thread); returns self."""
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop listening and free the port."""
        if self._thread.is_alive():
            self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> LoopbackProbe:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
