"""The model gateway: "network off" still lets the agent reach its model, and only its model.

The harness runs the gateway outside the sandbox, an HTTP reverse proxy listening on a
Unix socket in a folder of its own; the runner binds that folder (read-only) into the
sandbox, the only folder holding a socket it ever binds. Inside, `forward.py` (copied
next to the socket) listens on the sandbox's own 127.0.0.1 and pipes to the socket, so
an agent CLI gets an ordinary TCP base URL. The gateway forwards a request only when
its path matches a route of the agent spec's model endpoints, injects the API key
itself (the sandbox gets a placeholder), reads the usage off every response, streaming
or not, and writes one line per request — refused ones included — to its own log, an
account of tokens independent of what the adapter reports. Under `network: on`
(`open_network=True`) it is also the sandbox's forward proxy with an open allowlist
(`egress.py`: CONNECT tunnels and absolute-URI requests, each a log line too), so the
sandbox keeps its own network namespace and every run has a traffic log. A trial's budgets
(`budget.py`) are kept here too: once one is spent, the agent's next model request gets its
provider's own refusal, and an agent that keeps asking is ended.

    with Gateway(run_dir / "gateway", [Route("anthropic", "https://…", headers={"x-api-key": key})],
                 log_path=run_dir / "gateway.jsonl") as gw:
        spec = SandboxSpec(argv=gw.wrap_argv(argv, port=8765), mounts=(..., gw.mount()), env={
            "ANTHROPIC_BASE_URL": gw.base_url("anthropic", port=8765), "ANTHROPIC_API_KEY": PLACEHOLDER_KEY, ...})
"""

from __future__ import annotations

import shutil
import socketserver
import sys
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from harness.gateway.budget import Meter
from harness.gateway.log import GatewayRecord, read_log, usage_totals
from harness.gateway.proxy import Handler, Proxy
from harness.gateway.usage import Usage
from harness.sandbox.isolation.base import Mount

__all__ = [
    "DEFAULT_PORT",
    "PLACEHOLDER_KEY",
    "Gateway",
    "GatewayRecord",
    "Meter",
    "Route",
    "Usage",
    "read_log",
    "usage_totals",
]

SOCKET_NAME = "gateway.sock"
FORWARDER_NAME = "forward.py"
DEFAULT_PORT = 8765
PLACEHOLDER_KEY = "assay-gateway-injects-the-key"
"""What the sandbox gets instead of a real key when the gateway injects it."""


@dataclass(frozen=True)
class Route:
    """One model endpoint the agent may reach.

    Requests to `/<name>/<path>` go to `upstream + /<path>` when `<path>` starts with one
    of `paths` (None: any path, the open allowlist of `network: on`) and the method is
    one of `methods`. `headers` are set on the upstream request, replacing the agent's
    own credential headers (`strip`), so a real key never enters the sandbox.
    """

    name: str
    upstream: str
    paths: tuple[str, ...] | None = ("/v1/",)
    methods: tuple[str, ...] = ("POST", "GET")
    headers: Mapping[str, str] = field(default_factory=dict)
    strip: tuple[str, ...] = ("authorization", "x-api-key", "api-key", "x-goog-api-key")


class _UnixServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


class Gateway:
    """A running gateway; a context manager that removes its socket on exit."""

    def __init__(
        self,
        folder: Path,
        routes: Iterable[Route],
        *,
        log_path: Path,
        open_network: bool = False,
        meter: Meter | None = None,
    ) -> None:
        self.folder = folder
        self.open_network = open_network
        """Also a forward proxy with an open allowlist (`network: on`), see `harness.gateway.egress`."""
        self.meter = meter
        """The trial's budgets (`harness.gateway.budget`), when it has any."""
        self.routes = {route.name: route for route in routes}
        self.log_path = log_path
        self._server: _UnixServer | None = None
        self._proxy: Proxy | None = None
        self._thread: threading.Thread | None = None

    @property
    def socket_path(self) -> Path:
        """The Unix socket the gateway listens on (host path = sandbox path)."""
        return self.folder / SOCKET_NAME

    def start(self) -> Gateway:
        """Create the folder (socket + forwarder only) and serve in a background thread."""
        self.folder.mkdir(parents=True, exist_ok=True)
        self.folder.chmod(
            0o755
        )  # a mkdtemp folder is 0700; the sandbox's uid is not ours under a root harness
        if any(p.name not in (SOCKET_NAME, FORWARDER_NAME) for p in self.folder.iterdir()):
            raise ValueError(
                f"{self.folder}: the gateway folder is bound into the sandbox and must hold nothing else"
            )
        self.socket_path.unlink(missing_ok=True)
        shutil.copyfile(Path(__file__).with_name(FORWARDER_NAME), self.folder / FORWARDER_NAME)
        proxy = self._proxy = Proxy(
            self.routes, self.log_path, open_network=self.open_network, meter=self.meter
        )
        handler = type("BoundHandler", (Handler,), {"proxy": proxy})
        self._server = _UnixServer(str(self.socket_path), handler)
        self.socket_path.chmod(0o666)  # the sandbox's uid may differ from ours
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.1},
            daemon=True,
            name="assay-gateway",
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and remove the socket."""
        if self.meter is not None:
            self.meter.close()
        if self._proxy is not None:
            self._proxy.closed.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self.socket_path.unlink(missing_ok=True)

    def mount(self) -> Mount:
        """The one socket-holding folder the sandbox may see, read-only."""
        return Mount(self.folder, self.folder, writable=False)

    def base_url(self, route: str, *, port: int = DEFAULT_PORT) -> str:
        """The base URL the agent uses inside the sandbox for `route`."""
        if route not in self.routes:
            raise KeyError(f"no route {route!r}; routes: {', '.join(sorted(self.routes))}")
        return f"http://127.0.0.1:{port}/{route}"

    def wrap_argv(
        self, argv: Sequence[str], *, port: int = DEFAULT_PORT, python: str | None = None
    ) -> list[str]:
        """argv prefixed with the in-sandbox forwarder (it runs argv and returns its exit code)."""
        interpreter = python or str(Path(sys.executable))
        return [
            interpreter,
            "-I",
            "-S",
            str(self.folder / FORWARDER_NAME),
            str(port),
            str(self.socket_path),
            "--",
            *argv,
        ]

    def records(self) -> list[GatewayRecord]:
        """Every request seen so far."""
        return read_log(self.log_path)

    def __enter__(self) -> Gateway:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
