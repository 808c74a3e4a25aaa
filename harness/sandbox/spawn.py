"""The process wrapper's second form: a process kept running, talked to over its stdin and stdout.

`harness.sandbox.proc.run` runs a command to its end. A server kept across uses (a warm batch
server, `harness.sandbox.batch_warm`) instead takes requests on stdin and answers on stdout for as
long as its caller keeps it; it starts the same way (`launcher_argv`: tied to the thread that
started it, its tree ended as a whole), every read and write has a deadline, and `close` ends its
whole tree.

    server = spawn(argv, cwd=folder, env=env, namespaces=False)
    server.send(request, timeout_s=10)
    for line in server.lines(timeout_s=60, cap=1 << 20): ...
    server.close()
"""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from harness.sandbox.proc import CHUNK, end_tree, launcher_argv, sandbox_pipe


class Spawned:
    """A running process (`spawn`): write to its stdin, read its stdout by lines, `close` it."""

    def __init__(self, popen: subprocess.Popen[bytes], stdin: int, stdout: int) -> None:
        self._popen, self._in, self._out = popen, stdin, stdout
        self._pending = bytearray()
        os.set_blocking(stdin, False)

    def alive(self) -> bool:
        """Whether it is still running."""
        return self._popen.poll() is None

    def send(self, data: bytes, *, timeout_s: float) -> bool:
        """Write all of `data` to its stdin; False when it stops reading or takes over timeout_s."""
        poller, deadline = select.poll(), time.monotonic() + timeout_s
        poller.register(self._in, select.POLLOUT)
        view = memoryview(data)
        while view:
            left = deadline - time.monotonic()
            if left <= 0 or not poller.poll(int(left * 1000) + 1):
                return False
            try:
                view = view[os.write(self._in, view) :]
            except BlockingIOError:
                continue
            except OSError:  # it closed its stdin, or ended
                return False
        return True

    def lines(self, *, timeout_s: float, cap: int) -> Iterator[bytes]:
        """The lines it writes on stdout as they come, until its stdout ends, timeout_s passes or
        more than `cap` bytes came; a caller that stops early leaves the rest for the next call."""
        poller, deadline, taken = select.poll(), time.monotonic() + timeout_s, 0
        poller.register(self._out, select.POLLIN)
        while True:
            end = self._pending.find(b"\n")
            if end >= 0:
                line = bytes(self._pending[:end])
                del self._pending[: end + 1]
                yield line
                continue
            left = deadline - time.monotonic()
            if left <= 0 or taken > cap:
                return
            if not poller.poll(int(left * 1000) + 1):
                continue
            chunk = os.read(self._out, CHUNK)
            if not chunk:
                return
            taken += len(chunk)
            self._pending += chunk

    def close(self) -> None:
        """End it and its whole tree (a sandbox: its pid namespace goes with it)."""
        for fd in (self._in, self._out):
            with contextlib.suppress(OSError):
                os.close(fd)
        end_tree(self._popen)


def spawn(argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], namespaces: bool = True) -> Spawned:
    """Start `argv` to talk to, with exactly `env` (stderr merged into stdout); `namespaces` as in
    `harness.sandbox.proc.launcher_argv` (False: argv is a sandbox with namespaces of its own)."""
    full, _ = launcher_argv(argv, namespaces=namespaces)
    out_r, out_w = sandbox_pipe(child_end=1)
    in_r, in_w = sandbox_pipe(child_end=0)
    try:
        popen = subprocess.Popen(
            full,
            cwd=cwd,
            env=dict(env),
            stdin=in_r,
            stdout=out_w,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except OSError:
        os.close(out_r)
        os.close(in_w)
        raise
    finally:
        os.close(out_w)
        os.close(in_r)
    return Spawned(popen, in_w, out_r)
