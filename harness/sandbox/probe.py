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

import contextlib
import os
import secrets
import selectors
import shlex
import socket
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


REPLY_LIMIT = 65536
"""Bytes of a request the listener reads before it answers (a request line and a few headers)."""


class LoopbackProbe:
    """A listener on 127.0.0.1:<free port> answering one secret token over HTTP; counts connections.

    Every probe of the process is served by one thread (`_Hub`): a listener per trial costs a
    socket, not a thread and a server."""

    def __init__(self) -> None:
        self.token = "assay-probe-" + secrets.token_hex(8)
        self._count = 0
        self._lock = threading.Lock()
        self._socket = socket.create_server(("127.0.0.1", 0))
        self._socket.setblocking(False)
        self._open = True

    @property
    def connections(self) -> int:
        """Connections that reached the listener so far, those still waiting to be accepted too."""
        self.accept()
        return self._count

    def accept(self) -> list[socket.socket]:
        """Take every connection waiting on the listener, counted (the hub answers them)."""
        taken: list[socket.socket] = []
        with self._lock:
            while self._open:
                try:
                    conn, _addr = self._socket.accept()
                except (BlockingIOError, InterruptedError):
                    break
                except OSError:
                    break
                self._count += 1
                conn.setblocking(False)
                taken.append(conn)
        if taken:
            _HUB.answer(self, taken)
        return taken

    def reply(self) -> bytes:
        body = self.token.encode()
        head = f"HTTP/1.0 200 OK\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        return head.encode() + body

    @property
    def url(self) -> str:
        """Where the listener is, on the host's loopback."""
        return f"http://127.0.0.1:{self._socket.getsockname()[1]}/"

    def command(self) -> str:
        """The shell command a sandbox runs to try the listener."""
        # bash where there is one (a Python start was most of a trial's canary phase); else -I -S
        # and the bare _socket: no site, no http.client, not even the socket module
        args = [self.url, self.token]
        bash = shlex.join(["/bin/bash", "-p", "-c", BASH_PROBE, "assay-probe", *args])
        python = shlex.join([sys.executable, "-I", "-S", "-c", PROBE, *args])
        return f"if [ -x /bin/bash ]; then {bash}; else {python}; fi"

    def start(self) -> LoopbackProbe:
        """Start answering (on the process's probe thread); returns self."""
        _HUB.add(self)
        return self

    def close(self) -> None:
        """Stop listening and free the port (at once; idempotent)."""
        with self._lock:
            if not self._open:
                return
            self._open = False
        _HUB.remove(self)
        self._socket.close()

    def fileno(self) -> int:
        return self._socket.fileno()

    def __enter__(self) -> LoopbackProbe:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class _Hub:
    """The one thread that answers every listening probe of this process (started on first use,
    again in a forked child, whose parent's thread did not come along)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pid = -1
        self._selector: selectors.BaseSelector | None = None
        self._wake: tuple[int, int] = (-1, -1)
        self._pending: list[tuple[str, object]] = []

    def _running(self) -> None:
        if self._pid == os.getpid():
            return
        self._pid = os.getpid()
        self._selector = selectors.DefaultSelector()
        self._wake = os.pipe()
        os.set_blocking(self._wake[0], False)
        os.set_blocking(self._wake[1], False)
        self._selector.register(self._wake[0], selectors.EVENT_READ, None)
        self._pending = []
        threading.Thread(target=self._serve, args=(self._selector,), daemon=True, name="assay-probe").start()

    def _ask(self, what: str, item: object) -> None:
        with self._lock:
            self._running()
            self._pending.append((what, item))
            with contextlib.suppress(BlockingIOError):
                os.write(self._wake[1], b"x")

    def add(self, probe: LoopbackProbe) -> None:
        self._ask("add", probe)

    def remove(self, probe: LoopbackProbe) -> None:
        self._ask("remove", probe)

    def answer(self, probe: LoopbackProbe, conns: list[socket.socket]) -> None:
        for conn in conns:
            self._ask("conn", (probe, conn))

    def _serve(self, selector: selectors.BaseSelector) -> None:
        reading: dict[socket.socket, tuple[LoopbackProbe, bytearray]] = {}
        while True:
            for key, _ in selector.select():
                data = key.data
                if data is None:
                    with contextlib.suppress(BlockingIOError):
                        os.read(key.fd, 4096)
                    with self._lock:
                        asked, self._pending = self._pending, []
                    for what, item in asked:
                        self._apply(selector, reading, what, item)
                elif isinstance(data, LoopbackProbe):
                    data.accept()  # counted, and handed back here as "conn"
                else:
                    self._read(selector, reading, data)

    def _apply(
        self,
        selector: selectors.BaseSelector,
        reading: dict[socket.socket, tuple[LoopbackProbe, bytearray]],
        what: str,
        item: object,
    ) -> None:
        if what == "add" and isinstance(item, LoopbackProbe):
            with contextlib.suppress(ValueError, KeyError, OSError):
                selector.register(item.fileno(), selectors.EVENT_READ, item)
        elif what == "remove" and isinstance(item, LoopbackProbe):
            for key in list(selector.get_map().values()):
                if key.data is item or (
                    isinstance(key.data, socket.socket) and reading.get(key.data, (None,))[0] is item
                ):
                    selector.unregister(key.fd)
                    if isinstance(key.data, socket.socket):
                        reading.pop(key.data, None)
                        key.data.close()
        elif what == "conn" and isinstance(item, tuple):
            probe, conn = item
            reading[conn] = (probe, bytearray())
            selector.register(conn, selectors.EVENT_READ, conn)

    def _read(
        self,
        selector: selectors.BaseSelector,
        reading: dict[socket.socket, tuple[LoopbackProbe, bytearray]],
        conn: socket.socket,
    ) -> None:
        probe, seen = reading[conn]
        try:
            chunk = conn.recv(4096)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        seen += chunk
        if chunk and b"\r\n\r\n" not in seen and len(seen) < REPLY_LIMIT:
            return  # the request is not all here yet
        selector.unregister(conn)
        del reading[conn]
        if chunk:
            with contextlib.suppress(OSError):
                conn.setblocking(True)
                conn.settimeout(1.0)
                conn.sendall(probe.reply())
        conn.close()


_HUB = _Hub()
