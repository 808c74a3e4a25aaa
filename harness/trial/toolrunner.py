"""In-sandbox runner of the traced tools, then the command: `python -I -S toolrunner.py TOOLS SOCKET -- ARGV`.

The agent can write every file it can reach, so a trace it could append to proves nothing. This
process is the only writer of tool-use rows. It starts before the command, inside the sandbox:

1. it makes itself undumpable (no process of the sandbox may ptrace it or open its /proc
   files: the sandbox has no capabilities) and registers with the harness's collector over
   the Unix socket SOCKET with the one-time token in `ASSAY_TRACE_TOKEN` (removed from its
   environment before anything else starts, and consumed by the collector: no later process
   can register with it);
2. it listens on a socket of its own (path in `ASSAY_TOOL_SOCKET` for the command) where the
   tracing shims (`harness.trial.shim`) hand over an invocation: tool name, argv, cwd,
   environment and their stdin/stdout/stderr as file descriptors;
3. it runs the real executable named in TOOLS (a JSON file the harness wrote, read-only here)
   itself, relays its output to the caller's descriptors, counts the bytes, tees serve
   sessions line by line, and sends one row per invocation to the collector: a row exists
   only when the real binary ran, with the exit status the kernel gave its parent;
4. it runs ARGV as its child and exits with its code (128+N for signal N).

Anyone in the sandbox may ask it to run a tool: that is using the tool. Nobody can send it a
row. Stdlib only: it is copied next to the shims, the project is not visible inside.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import IO, Any

PR_SET_DUMPABLE = 4
LOADER_VARS = ("LD_", "DYLD_", "PYTHON", "PERL5", "RUBY", "NODE_OPTIONS", "NODE_PATH", "BASH_ENV", "ENV")
"""Variables that make a program run other code first: never passed to the real tool."""
STDERR_TAIL = 2000
SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


class Collector:
    """The registered connection to the harness: rows go out one JSON line each."""

    def __init__(self, path: str, token: str, *, guarded: bool) -> None:
        self.lock = threading.Lock()
        self.sock: socket.socket | None = None
        try:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.connect(path)
            sock.sendall(b"HELLO %s %d\n" % (token.encode(), guarded))
            self.replies = sock.makefile("rb")
            if self.replies.readline().strip() == b"OK":
                self.sock = sock
        except OSError:
            self.sock = None

    def send(self, row: dict[str, object], *, ack: bool = False) -> None:
        """One row; with `ack`, returns once the collector has it (before the caller hears the exit)."""
        if self.sock is None:
            return
        line = (json.dumps({**row, "ack": 1} if ack else row, sort_keys=True) + "\n").encode()
        with self.lock, contextlib.suppress(OSError):
            self.sock.sendall(line)
            if ack:
                self.replies.readline()


def undumpable() -> bool:
    try:
        done: int = ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
        return done == 0
    except (OSError, AttributeError):
        return False


def tool_env(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if not k.startswith(LOADER_VARS) and k != "ASSAY_TOOL_SOCKET"}


def pump(
    src: IO[bytes],
    dst_fd: int,
    counter: dict[str, int],
    key: str,
    tee: Callable[[bytes], None] | None = None,
    tail: bytearray | None = None,
) -> None:
    """Copy a tool's pipe to the caller's descriptor, counting bytes (lines teed when serving)."""
    broken = False
    while True:
        data = src.readline() if tee is not None else os.read(src.fileno(), 65536)
        if not data:
            break
        counter[key] += len(data)
        if tee is not None:
            tee(data)
        if tail is not None:
            tail[:] = (bytes(tail) + data)[-STDERR_TAIL:]
        while data and not broken:
            try:
                data = data[os.write(dst_fd, data) :]
            except OSError:
                broken = True  # the caller stopped reading: keep draining so the tool is not blocked


def feed(src_fd: int, proc_stdin: IO[bytes], counter: dict[str, int], tee: Callable[[bytes], None]) -> None:
    """A serve session's input: the caller's stdin to the tool, line by line, each line teed."""
    with os.fdopen(os.dup(src_fd), "rb") as src:
        for line in src:
            counter["stdin"] += len(line)
            tee(line)
            try:
                proc_stdin.write(line)
                proc_stdin.flush()
            except (OSError, ValueError):
                break
    with contextlib.suppress(OSError):
        proc_stdin.close()


class Runner:
    def __init__(self, tools: dict[str, dict[str, Any]], collector: Collector) -> None:
        self.tools = tools
        self.collector = collector

    def serve(self, listener: socket.socket) -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=self.handle, args=(conn,), daemon=True).start()

    def handle(self, conn: socket.socket) -> None:
        fds: list[int] = []
        try:
            msg, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
            buffer = msg
            while not buffer.endswith(b"\n"):
                more = conn.recv(1 << 20)
                if not more:
                    return
                buffer += more
            request = json.loads(buffer)
            code = self.run(request, fds, conn) if len(fds) == 3 else 126
            conn.sendall(b"EXIT %d\n" % code)
        except (OSError, ValueError, TypeError, KeyError, AttributeError, RecursionError):
            pass  # an unreadable request (JSON nested too deeply included): refused, nothing run
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
            conn.close()

    def run(self, request: dict[str, Any], fds: list[int], conn: socket.socket) -> int:
        name = str(request.get("tool", ""))
        tool = self.tools.get(name)
        raw_argv = request.get("argv")
        args = [str(a) for a in raw_argv[1:]] if isinstance(raw_argv, list) else []
        if tool is None:
            os.write(fds[2], f"assay: {name} is not a traced tool\n".encode())
            return 127
        serve_words = [str(s) for s in tool.get("serve", [])]
        serving = bool(args) and (args[0] in serve_words or name + " " + args[0] in serve_words)
        session = f"{os.getpid()}-{int(time.time() * 1e6)}" if serving else None
        env = request.get("env")
        cwd = str(request.get("cwd") or "/")
        start = time.time()
        counter = {"stdout": 0, "stderr": 0, "stdin": 0}
        tail = bytearray()
        row: dict[str, object] = {"t": start, "tool": name, "argv": [name, *args], "cwd": cwd}
        try:
            proc = subprocess.Popen(
                [str(tool["real"]), *args],
                stdin=subprocess.PIPE if serving else fds[0],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=cwd,
                env=tool_env(env if isinstance(env, dict) else {}),
            )
        except OSError as exc:
            os.write(fds[2], f"{name}: {exc}\n".encode())
            row.update(
                exit=127, duration_s=0.0, stdout_bytes=0, stderr_bytes=0, output_bytes=0, error=str(exc)
            )
            self.collector.send(row, ack=True)
            return 127

        def tee(direction: str) -> Callable[[bytes], None]:
            def write(data: bytes) -> None:
                text = data.decode("utf-8", "replace").rstrip("\n")
                self.collector.send(
                    {"t": time.time(), "tool": name, "session": session, "dir": direction, "line": text}
                )

            return write

        threads = [
            threading.Thread(
                target=pump, args=(proc.stdout, fds[1], counter, "stdout", tee("out") if serving else None)
            ),
            threading.Thread(target=pump, args=(proc.stderr, fds[2], counter, "stderr", None, tail)),
        ]
        if serving:
            threads.append(
                threading.Thread(target=feed, args=(fds[0], proc.stdin, counter, tee("in")), daemon=True)
            )
        threading.Thread(target=self.watch, args=(conn, proc), daemon=True).start()
        for thread in threads:
            thread.start()
        code = proc.wait()
        for thread in threads[:2]:
            thread.join()
        row.update(
            exit=code,
            duration_s=round(time.time() - start, 6),
            stdout_bytes=counter["stdout"],
            stderr_bytes=counter["stderr"],
            output_bytes=counter["stdout"] + counter["stderr"],
            stderr=bytes(tail).decode("utf-8", "replace"),
        )
        if session is not None:
            row["session"] = session
        self.collector.send(row, ack=True)
        return code if code >= 0 else 128 - code

    @staticmethod
    def watch(conn: socket.socket, proc: subprocess.Popen[bytes]) -> None:
        """Signals the shim forwards (`KILL n`), or the shim gone: the tool gets the signal."""
        with contextlib.suppress(OSError, ValueError):
            for line in conn.makefile("rb"):
                if line.startswith(b"KILL "):
                    proc.send_signal(int(line.split()[1]))
        if proc.poll() is None:
            with contextlib.suppress(OSError):
                proc.terminate()


def listen() -> socket.socket | None:
    """The runner's own socket, in a fresh folder of the sandbox's private /tmp (a socket path
    may not pass 107 bytes, which TMPDIR deep in a run directory does), else of TMPDIR."""
    for parent in ("/tmp", None):
        try:
            folder = tempfile.mkdtemp(prefix="assay-tools-", dir=parent)
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind(os.path.join(folder, "runner.sock"))
            listener.listen(64)
            return listener
        except OSError:
            continue
    return None


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        print("usage: toolrunner.py TOOLS SOCKET -- ARGV", file=sys.stderr)
        return 2
    tools_file, collector_path, command = argv[0], argv[1], argv[3:]
    token = os.environ.pop("ASSAY_TRACE_TOKEN", "")
    guarded = undumpable()
    try:
        with open(tools_file, encoding="utf-8") as fh:
            tools = json.load(fh)
    except (OSError, ValueError):
        tools = {}
    collector = Collector(collector_path, token, guarded=guarded)
    env = dict(os.environ)
    listener = listen()
    if listener is not None:  # without one the command still runs; its tool use goes untraced
        threading.Thread(target=Runner(tools, collector).serve, args=(listener,), daemon=True).start()
        env["ASSAY_TOOL_SOCKET"] = listener.getsockname()
    try:
        child = subprocess.Popen(command, env=env)
    except OSError as exc:  # as a shell would say it: the launch, not the agent, failed (126/127)
        print(f"{command[0]}: {exc.strerror or exc}", file=sys.stderr)
        return 126 if isinstance(exc, PermissionError) else 127
    for sig in SIGNALS:
        signal.signal(sig, lambda signum, frame: child.send_signal(signum))
    code = child.wait()
    if listener is not None:  # under isolation none /tmp is the host's: leave nothing there
        with contextlib.suppress(OSError):
            path = listener.getsockname()
            os.unlink(path)
            os.rmdir(os.path.dirname(path))
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    status = main(sys.argv[1:])
    sys.stderr.flush()
    os._exit(status)  # not sys.exit: relay threads must not delay the command's exit code
