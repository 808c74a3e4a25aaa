"""A first phase in the same launch as a command: the canaries before the agent, one sandbox start.

A sandbox start costs more than most canaries, and the agent's own start as much again; so the
trial runs both in one launch, in order, with a gate between them that only the harness opens.
`Gate.wrap(phase, argv)` is the argv of that launch: a shell that runs the `phase` script, prints
a marker nobody else knows (a fresh nonce), waits for a line on its stdin, then execs argv.

`harness.sandbox.proc.run(..., gate=g)` keeps the launch's output up to the marker apart
(`g.output`: never in the command's log, never against its output cap), calls `g.opened(output)`
so the harness can act on the phase before the command exists (keep the phase's tool-trace rows
aside, say), and only then writes the go-ahead and the command's stdin. The command's timeout
and duration count from there; the phase has `g.timeout_s` of its own. A launch that ends before
the marker never ran the command: `g.at` stays None, and `g.output` holds what the phase printed.
Nothing the command prints can open the gate: it does not exist until the gate is open.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

KEEP = 1_000_000
"""Bytes of the phase's output kept (the end of it: the marker is looked for there)."""


def _nothing(output: bytes) -> None:
    return None


@dataclass
class Gate:
    """The phase's side of one gated launch (one use)."""

    timeout_s: float
    """Seconds the phase may take; then the launch is ended and the command never starts."""
    opened: Callable[[bytes], None] = _nothing
    """Called with the phase's output once it is over, before the command starts."""
    marker: str = field(default_factory=lambda: "@@assay-gate-" + secrets.token_hex(12))
    output: bytes = b""
    """What the phase printed (up to the marker; all of it when the gate never opened)."""
    began: float | None = None
    """time.monotonic() when the launch started."""
    at: float | None = None
    """time.monotonic() when the gate opened; None while the phase runs, or if it never ended."""
    failed: BaseException | None = None
    """What `opened` raised: the command was then never let start."""
    _buffer: bytearray = field(default_factory=bytearray)
    _done: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _shut: bool = False

    def wrap(self, phase: str, argv: Sequence[str]) -> list[str]:
        """The launch's argv: the phase, the marker, one line read from stdin, then argv."""
        script = f'{phase}\nprintf "\\n%s\\n" "$0"; read -r _ || exit 125; exec "$@"'
        return ["sh", "-c", script, self.marker, *argv]

    @property
    def phase_s(self) -> float | None:
        """Seconds the phase took, when it ended."""
        return None if self.at is None or self.began is None else self.at - self.began

    def feed(self, chunk: bytes) -> bytes:
        """Take the launch's output: kept while the phase runs; returns what the command printed."""
        with self._lock:
            return self._feed(chunk)

    def _feed(self, chunk: bytes) -> bytes:
        if self.at is not None:
            return chunk
        if self._shut:  # ended (its time ran out, say) before the marker: the gate never opens
            self.output += chunk
            return b""
        self._buffer += chunk
        tag = b"\n" + self.marker.encode() + b"\n"
        end = self._buffer.find(tag)
        if end < 0:
            del self._buffer[: max(0, len(self._buffer) - KEEP)]
            return b""
        rest = bytes(self._buffer[end + len(tag) :])
        self.output = bytes(self._buffer[:end])
        self._buffer.clear()
        self.at = time.monotonic()
        try:
            self.opened(self.output)
        except BaseException as exc:  # re-raised by the caller after the launch; the command never starts
            self.failed = exc
        finally:
            self._done.set()
        return rest

    def wait(self) -> bool:
        """Block until the phase is over (or the launch is); True when the command may start."""
        self._done.wait()
        return self.at is not None and self.failed is None

    def close(self) -> None:
        """The launch is over, or being ended: the gate stays as it is (shut, if it never opened);
        release a waiting feeder; keep what a phase that never ended printed."""
        with self._lock:
            if self.at is None and not self._shut:
                self._shut = True
                self.output = bytes(self._buffer)
                self._buffer.clear()
        self._done.set()

    def deadline(self, timeout_s: float | None) -> float | None:
        """When the launch is ended: the phase's own limit until the gate opens, then the command's."""
        assert self.began is not None
        if self.at is None:
            return self.began + self.timeout_s
        return None if timeout_s is None else self.at + timeout_s
