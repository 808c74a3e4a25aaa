"""The collector: the one way a tool-use row reaches trace.jsonl.

A Unix socket served by the harness outside the sandbox, in a folder of its own bound
read-only into it (like the model gateway's); beside the socket, `trace.jsonl` mirrors the
rows as they arrive, for an agent that wants to read what it ran (`BENCH_TRACE`) — readable
inside, writable only by the harness, and never what is graded. Every sandboxed command of a trial whose cell
traces a tool starts under the tool runner (`harness.trial.toolrunner`), which registers here
with a one-time token armed for that command and then sends one JSON row per invocation it
ran. The agent cannot write a row: the token is consumed before the agent exists, a
registration with any other token is refused (and counted), and the runner's connection lives
in a process the sandbox cannot ptrace. Rows are kept in memory and written to trace.jsonl by
the harness itself (`write`), replacing whatever else is there.

    with Collector(tools_file) as collector:
        launcher = Launcher(..., hook=collector)   # every command: runner prefix + token
        ...
        collector.write(run_dir / "trace.jsonl")
"""

from __future__ import annotations

import contextlib
import json
import secrets
import shutil
import socketserver
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from harness.artifacts.lock import host_tmp
from harness.artifacts.records import TraceChannel
from harness.artifacts.store import write_atomic
from harness.sandbox.isolation.base import Mount

TOKEN_VAR = "ASSAY_TRACE_TOKEN"
SOCKET_NAME = "trace.sock"
MIRROR_NAME = "trace.jsonl"
RUNNER = Path(__file__).with_name("toolrunner.py")
"""Copied next to the socket: the project folder is not visible inside the sandbox."""
DRAIN_S = 10.0
"""How long `done` waits for the runners of an ended command to hang up (their sandbox is gone)."""


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number")


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


class Collector:
    """Serves runner registrations and their rows; the Launcher's per-command hook."""

    def __init__(self, tools_file: Path) -> None:
        self.tools_file = tools_file
        # The machine's temp dir, not tempfile's: a runner points that into the runs tree, which
        # may be deep, and a socket path may not pass 107 bytes.
        self.folder = host_tmp("tr")
        self._armed: set[str] = set()
        self._rows: list[dict[str, Any]] = []
        self._open = 0
        self._cond = threading.Condition()
        self._server: _Server | None = None
        self._failed: OSError | None = None  # what the mirror could not take: raised by `write`
        self.stats = {"launches": 0, "registered": 0, "unguarded": 0, "refused": 0, "rows": 0, "late": 0}

    @property
    def socket_path(self) -> Path:
        return self.folder / SOCKET_NAME

    @property
    def mirror(self) -> Path:
        """The rows so far, readable in the sandbox (`BENCH_TRACE`); the graded file is `write`'s."""
        return self.folder / MIRROR_NAME

    def __enter__(self) -> Collector:
        self.folder.chmod(0o755)  # a mkdtemp folder is 0700; the sandbox's uid may not be ours
        collector = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                collector._serve(self.rfile, self.wfile)

        self._server = _Server(str(self.socket_path), Handler)
        self.socket_path.chmod(0o666)
        self.mirror.write_bytes(b"")
        self.mirror.chmod(0o644)
        shutil.copyfile(RUNNER, self.folder / RUNNER.name)
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True
        ).start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        shutil.rmtree(self.folder, ignore_errors=True)

    def mount(self) -> Mount:
        """The socket's folder, read-only inside the sandbox."""
        return Mount(self.folder, self.folder, writable=False)

    def wrap(self, argv: Sequence[str], env: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
        """One command's argv under the tool runner, and its environment with a fresh token."""
        token = secrets.token_hex(16)
        with self._cond:
            self._armed.add(token)
            self.stats["launches"] += 1
        runner = [
            sys.executable,
            "-I",
            "-S",
            str(self.folder / RUNNER.name),
            str(self.tools_file),
            str(self.socket_path),
            "--",
        ]
        return [*runner, *argv], {**env, TOKEN_VAR: token}

    def done(self) -> None:
        """The command ended: disarm its token, wait (bounded) for its runner's last rows."""
        with self._cond:
            self._armed.clear()
            if not self._cond.wait_for(lambda: self._open == 0, timeout=DRAIN_S):
                self.stats["late"] += 1

    def _serve(self, rfile: Any, wfile: Any) -> None:
        hello = rfile.readline(200).split()
        with self._cond:
            ok = len(hello) == 3 and hello[0] == b"HELLO" and hello[1].decode(errors="replace") in self._armed
            if not ok:
                self.stats["refused"] += 1
                return
            self._armed.discard(hello[1].decode())
            self.stats["registered"] += 1
            self.stats["unguarded"] += hello[2] != b"1"
            self._open += 1
        try:
            wfile.write(b"OK\n")
            wfile.flush()
            for line in rfile:
                try:
                    row = json.loads(line, parse_constant=_no_constant)
                except ValueError:
                    continue
                if not isinstance(row, dict):
                    continue
                ack = row.pop("ack", None)
                with self._cond:
                    self._rows.append(row)
                    self._mirror(row)
                if ack is not None:  # the runner answers its caller only once the row is here
                    wfile.write(b"ACK\n")
                    wfile.flush()
        except OSError:  # the runner hung up (its sandbox was ended): the rows it sent are kept
            pass
        finally:
            with self._cond:
                self._open -= 1
                self._cond.notify_all()

    def _mirror(self, row: dict[str, Any]) -> None:
        try:
            with self.mirror.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(row, sort_keys=True) + "\n")
        except OSError as exc:  # in a server thread it would only be printed: `write` raises it
            self._failed = self._failed or exc

    def take(self) -> list[dict[str, Any]]:
        """The rows so far, removed (setup and canaries ran the tool too: not the agent's use)."""
        with self._cond:
            rows, self._rows = self._rows, []
            self.mirror.write_bytes(b"")
        return rows

    def write(self, path: Path) -> None:
        """trace.jsonl: the rows received since the last `take`, nothing else (none: no file).

        Raises:
            OSError: trace.jsonl, or the mirror the sandbox reads, could not be written.
        """
        if self._failed is not None:
            raise self._failed
        rows = self.take()
        self.stats["rows"] += len(rows)
        if rows:
            write_atomic(path, "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
        else:
            path.unlink(missing_ok=True)

    def report(self) -> TraceChannel:
        """For run.json: how the channel held."""
        return TraceChannel(**self.stats)


@contextlib.contextmanager
def for_trial(tools_file: Path, shimmed: Sequence[str]) -> Iterator[Collector | None]:
    """A running collector when the cell traces a tool, else None (no runner, no socket)."""
    if not shimmed:
        yield None
        return
    with Collector(tools_file) as collector:
        yield collector


def keep_aside(rows: Sequence[dict[str, Any]], path: Path) -> None:
    """Rows of setup commands and canaries: kept for the record, never counted as the agent's."""
    if rows:
        write_atomic(path, "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
