"""A listener on the host's loopback that proves whether a sandbox can reach out.

"Network off" is proven without sending a packet off the machine: the harness opens this
listener on the host's 127.0.0.1 (a port of its own), and the sandbox, which has a network
namespace of its own, tries to reach it. Under `off` nothing may arrive — the listener
counts every connection, so a probe that lies about its exit status is caught too; under
`on` the answer must come back (through the model gateway's proxy, the sandbox's only way
out). The probe runs inside with the harness's own interpreter (always in the sandbox's view),
without site and with only `_socket`: it is a Python start in every trial, and little more.

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
import _socket, posix, sys
url, token = sys.argv[1], sys.argv[2]
env = posix.environ
proxy = (env.get(b"HTTP_PROXY") or env.get(b"http_proxy") or b"").decode()  # NO_PROXY ignored on purpose
target = url.split("://", 1)[-1].split("/", 1)[0]
host, _, port = (proxy or url).split("://", 1)[-1].split("/", 1)[0].rpartition(":")
head = f"GET {url if proxy else '/'} HTTP/1.0\r\nHost: {target}\r\nConnection: close\r\n\r\n"
def connect():
    error = OSError("no address")
    for family, kind, proto, _name, address in _socket.getaddrinfo(host.strip("[]"), int(port or 80), 0, _socket.SOCK_STREAM):
        conn = _socket.socket(family, kind, proto)
        conn.settimeout(5)
        try:
            conn.connect(address)
            return conn
        except OSError as exc:
            conn.close()
            error = exc
    raise error
try:
    conn = connect()
    try:
        conn.sendall(head.encode())
        reply = b""
        while b"\r\n\r\n" not in reply and (chunk := conn.recv(65536)):
            reply += chunk
        status, _, rest = reply.partition(b"\r\n")
        fields, _, body = rest.partition(b"\r\n\r\n")
        size = [int(v) for k, _, v in (f.partition(b":") for f in fields.split(b"\r\n")) if k.strip().lower() == b"content-length"]
        while (not size or len(body) < size[0]) and (chunk := conn.recv(65536)):
            body += chunk
    finally:
        conn.close()
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

BASH_PROBE = r"""
url=$1 token=$2 proxy=${HTTP_PROXY:-$http_proxy} size=
rest=${url#*://} via=${proxy:-$url}
target=${rest%%/*} via=${via#*://}
via=${via%%/*}
host=${via%:*} port=${via##*:}
[ "$host" = "$via" ] && port=80
host=${host#[} && host=${host%]}
if [ -n "$proxy" ]; then path=$url; else path=/; fi
exec 3<>"/dev/tcp/$host/$port" || { echo "unreachable: cannot connect to $host:$port"; exit 1; }
trap '' PIPE
request="GET $path HTTP/1.0"$'\r\n'"Host: $target"$'\r\n'"Connection: close"$'\r\n\r\n'
printf '%s' "$request" >&3 ||
  { echo "unreachable: BrokenPipeError: the peer closed the connection"; exit 1; }
reply=
while IFS= read -r -d '' -t 5 chunk <&3; do reply+=$chunk; done
code=$?
reply+=$chunk
[ "$code" -gt 128 ] && { echo "unreachable: TimeoutError: no answer in 5 s"; exit 1; }
status=${reply%%$'\r\n'*}
case "$status" in HTTP/*' '?*) ;; *) echo "unreachable: ValueError: not an HTTP answer: ${status:0:80}"; exit 1;; esac
body=
case "$reply" in *$'\r\n\r\n'*) body=${reply#*$'\r\n\r\n'};; esac
head=${reply%%$'\r\n\r\n'*}
fields=${head#*$'\r\n'}$'\r\n'
shopt -s nocasematch
while [ -n "$fields" ]; do
  line=${fields%%$'\r\n'*} fields=${fields#*$'\r\n'}
  case "$line" in content-length:*) size=${line#*:} size=${size//[!0-9]/};; esac
done
[ -n "$size" ] && body=${body:0:size}
echo "reached: ${body:0:80}"
[ "$body" = "$token" ] && exit 0
exit 2
"""
"""The same probe in bash (its /dev/tcp): a tenth of a Python start's CPU. `-p` keeps BASH_ENV and
exported functions out; the Python probe runs where the sandbox has no /bin/bash."""


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
        # bash where there is one (a Python start was most of a trial's canary phase); else -I -S
        # and the bare _socket: no site, no http.client, not even the socket module
        args = [self.url, self.token]
        bash = shlex.join(["/bin/bash", "-p", "-c", BASH_PROBE, "assay-probe", *args])
        python = shlex.join([sys.executable, "-I", "-S", "-c", PROBE, *args])
        return f"if [ -x /bin/bash ]; then {bash}; else {python}; fi"

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
