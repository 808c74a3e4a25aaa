"""In-sandbox TCP -> Unix socket forwarder, then the agent: `python -I -S forward.py PORT SOCKET -- ARGV`.

Agent CLIs take a TCP base URL (`http://127.0.0.1:PORT`), but under network: off the
sandbox has its own loopback and nothing else; the gateway is reachable only as a Unix
socket bound into the sandbox. This script listens on the sandbox's 127.0.0.1:PORT,
pipes each connection to the socket, runs the agent as its child, and exits with the
agent's code (128+N for a signal). Stdlib only, no imports from the project: the gateway
copies this file next to its socket, because the project folder is not visible inside.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading


def _pipe(src: socket.socket, dst: socket.socket) -> None:
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for sock, how in ((dst, socket.SHUT_WR), (src, socket.SHUT_RD)):
            with contextlib.suppress(OSError):
                sock.shutdown(how)


def _serve(listener: socket.socket, path: str) -> None:
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            return
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(path)
        except OSError:
            client.close()
            upstream.close()
            continue
        for a, b in ((client, upstream), (upstream, client)):
            threading.Thread(target=_pipe, args=(a, b), daemon=True).start()


def main(argv: list[str]) -> int:
    port, path, sep, command = int(argv[0]), argv[1], argv[2], argv[3:]
    if sep != "--" or not command:
        print("usage: forward.py PORT SOCKET -- ARGV", file=sys.stderr)
        return 2
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(64)
    threading.Thread(target=_serve, args=(listener, path), daemon=True).start()
    child = subprocess.Popen(command)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda signum, frame: child.send_signal(signum))
    code = child.wait()
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    status = main(sys.argv[1:])
    sys.stderr.flush()
    os._exit(status)  # not sys.exit: the pipe threads must not delay the agent's exit code
