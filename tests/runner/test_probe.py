"""The network canary's probe, in both its forms (bash's /dev/tcp, Python's bare _socket), against
real listeners on the loopback: both must reach the same verdict on the same answer."""

from __future__ import annotations

import http.server
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.sandbox import proc
from harness.sandbox.probe import BASH_PROBE, PROBE, LoopbackProbe

FORMS = ("bash", "python")


def _argv(form: str, url: str, token: str) -> list[str]:
    if form == "bash":
        if not Path("/bin/bash").exists():
            pytest.skip("no /bin/bash here: only the Python probe runs")
        return ["/bin/bash", "-p", "-c", BASH_PROBE, "assay-probe", url, token]
    return [sys.executable, "-I", "-S", "-c", PROBE, url, token]


def _probe(form: str, url: str, token: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        _argv(form, url, token),
        env={"PATH": "/usr/bin:/bin", **env},
        capture_output=True,
        text=True,
        timeout=30,
    )


@pytest.fixture
def listener() -> Iterator[LoopbackProbe]:
    with LoopbackProbe() as probe:
        yield probe


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def answering() -> Iterator[str]:
    """The url of a loopback HTTP server that answers with another body than the token."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b"not-the-token"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body + b"trailing bytes past the length")

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("form", FORMS)
def test_the_listener_answers_its_token(form: str, listener: LoopbackProbe) -> None:
    done = _probe(form, listener.url, listener.token)
    assert (done.returncode, done.stdout) == (0, f"reached: {listener.token}\n")
    assert listener.connections == 1


@pytest.mark.parametrize("form", FORMS)
def test_through_a_proxy_the_request_names_the_whole_url(form: str, listener: LoopbackProbe) -> None:
    # The listener itself stands in for the proxy: it answers any path, so only a request that
    # went to the proxy's address (and not the url's port, closed here) gets the token.
    url = f"http://127.0.0.1:{_free_port()}/"
    done = _probe(form, url, listener.token, HTTP_PROXY=listener.url)
    assert done.returncode == 0, done.stdout + done.stderr
    assert listener.connections == 1


@pytest.mark.parametrize("form", FORMS)
def test_a_closed_port_is_unreachable(form: str) -> None:
    done = _probe(form, f"http://127.0.0.1:{_free_port()}/", "token")
    assert done.returncode == 1 and done.stdout.startswith("unreachable")


@pytest.mark.parametrize("form", FORMS)
def test_an_answer_without_the_token_is_not_the_listener(form: str, answering: str) -> None:
    done = _probe(form, answering, "assay-probe-0123")
    assert done.returncode == 2 and done.stdout == "reached: not-the-token\n"  # cut at Content-Length


@pytest.mark.parametrize("form", FORMS)
def test_a_peer_that_is_not_http_is_unreachable(form: str) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()

        def serve() -> None:
            conn, _ = server.accept()
            with conn:
                request = b""
                while b"\r\n\r\n" not in request and (chunk := conn.recv(65536)):
                    request += chunk
                conn.sendall(b"SSH-2.0-hello\r\n")

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        done = _probe(form, f"http://127.0.0.1:{server.getsockname()[1]}/", "token")
        thread.join(timeout=10)
    assert done.returncode == 1 and "not an HTTP answer" in done.stdout


@pytest.mark.parametrize("form", FORMS)
def test_from_an_empty_network_namespace_nothing_arrives(form: str, listener: LoopbackProbe) -> None:
    if not proc.pidns_available() or shutil.which("unshare") is None:
        pytest.skip("network namespaces unavailable here")
    done = subprocess.run(
        ["unshare", "--net", *_argv(form, listener.url, listener.token)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 1 and "unreachable" in done.stdout
    assert listener.connections == 0


def test_the_command_prefers_bash_and_falls_back_to_python(listener: LoopbackProbe) -> None:
    command = listener.command()
    assert command.startswith("if [ -x /bin/bash ]; then /bin/bash -p -c ")
    assert f"else {sys.executable} -I -S -c " in command
    done = subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and listener.connections == 1
