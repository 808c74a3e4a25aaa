"""The inside of a command batch: one sandbox launch runs several commands in turn.

Run with `batch_reset.py` and `batch_python.py` after it as the source of `python -c` inside the
sandbox (`harness.sandbox.batch.server_source`), never imported there: the standard library only, and
nothing in the commands' `sys.modules` that a fresh interpreter would not have. It reads frames on
stdin (ten digits of length, then a JSON document): its configuration, then a run of commands (a
server kept across runs: one per run); it writes one JSON line per command on stdout as each ends.

Each command starts from the state the run began with: every process the previous one left is
killed (`kill(-1)` in the sandbox's own pid namespace; the server is a subreaper and reaps them),
the writable folders (`roots`: the workspace, HOME, /tmp...) are put back from a copy in the
server's memory, the sandbox's IPC namespace is emptied (`batch_reset.py`). The server is not
dumpable: a command cannot reach its memory or descriptors through /proc or ptrace. A command
whose `python` is this interpreter, with the same interpreter-level environment, is forked from the
server with `preload` imported (pytest costs more to import than most test suites take to run);
anything else is exec'd as it is.

A server kept across runs (`warm`: `harness.sandbox.batch_warm`) is the sandbox's init (pid 1: no
process of the sandbox can signal it) and never reads a run: for each it forks a child that reads
the commands, puts the folders back as the server found them (the workspace aside: the harness puts
the run's own there), runs them and ends; the server then kills whatever is left. Nothing a run saw
is ever in the server's memory, so the next run's commands, forked from it, cannot find it there.

The server refuses (`{"refused": why}`) outside a pid namespace of its own, where `kill(-1)` would
reach the host's processes, and a warm one when it is not pid 1 or the IPC namespace is not its
own; the caller then runs the commands one by one.
"""

import os  # (os and sys are loaded by the interpreter's start: no search of the path)
import sys

# Never the workspace's modules: `python -c` puts the working folder first on the path, and a
# json.py the agent left there would run in the server (json is its first import) and write verdicts.
sys.path[:] = [p for p in sys.path if p not in ("", os.getcwd())]
_BASELINE = frozenset(sys.modules)


def _read(count: int) -> bytes | None:
    """Exactly `count` bytes of stdin (never more: the next frame is the next reader's), or None at
    its end."""
    data = b""
    while len(data) < count:
        chunk = os.read(0, count - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def _frame() -> dict[str, object] | None:
    import json

    header = _read(10)
    body = _read(int(header)) if header is not None else None
    return None if body is None else dict(json.loads(body))


def _preload(names: list[str]) -> None:
    for name in [m for m in sys.modules if m not in _BASELINE]:
        del sys.modules[name]  # what reading the configuration imported (json): not a fresh interpreter's
    for name in names:
        try:
            __import__(name)
            if name == "pytest":  # and the plug-ins every run of it imports
                from _pytest.config import default_plugins

                for plugin in default_plugins:
                    __import__(f"_pytest.{plugin}")
        except Exception:  # a preload is an optimisation; the command imports it again
            continue


CONFIG = _frame() or {}
_preload([str(n) for n in CONFIG.get("preload") or []])  # type: ignore[attr-defined]
_KEEP = frozenset(sys.modules)

import base64  # noqa: E402
import ctypes  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import select  # noqa: E402
import signal  # noqa: E402
import time  # noqa: E402
from typing import TYPE_CHECKING  # noqa: E402

if TYPE_CHECKING:  # the rest of the program (see the docstring)
    from harness.sandbox.batch_python import become_python, python_argv
    from harness.sandbox.batch_reset import (
        Entry,
        TooBig,
        capture,
        clean_ipc,
        end_all,
        mqueue_shown,
        reap,
        reset,
    )

_LIBC = ctypes.CDLL(None, use_errno=True)
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
CHUNK = 1 << 16


def emit(row: dict[str, object]) -> None:
    data = (json.dumps(row) + "\n").encode()
    while data:
        data = data[os.write(1, data) :]


def child(cmd: dict[str, object], out_w: int, err_w: int, forked: list[str] | None, home: str | None) -> None:
    """In the forked child: become the command. Never returns."""
    code = 1
    try:
        os.setsid()
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        os.closerange(3, 65536)
        if forked is None:  # an exec'd command starts with the default dispositions, as from a shell
            for sig in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT, signal.SIGTERM, signal.SIGCHLD):
                signal.signal(sig, signal.SIG_DFL)
        else:  # a forked interpreter keeps this one's, a fresh interpreter's
            signal.signal(signal.SIGINT, signal.default_int_handler)
        env = {str(k): str(v) for k, v in dict(cmd["env"]).items()}  # type: ignore[call-overload]
        argv = [str(a) for a in cmd["argv"]]  # type: ignore[attr-defined]
        if forked is None:
            if home is not None:
                argv = ["env", f"HOME={home}", *argv]
            try:
                os.execvpe(argv[0], argv, env)
            except OSError as exc:
                os.write(2, f"sh: 1: exec: {argv[0]}: {exc.strerror}\n".encode())
                os._exit(126 if isinstance(exc, PermissionError) else 127)
        if home is not None:
            env["HOME"] = home
        _LIBC.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
        code = become_python(forked, env)
    finally:
        os._exit(code)


def run_one(cmd: dict[str, object], home: str | None, signal_base: int) -> dict[str, object]:
    """Run one command to its end, its timeout or its output cap; what it left."""
    timeout = float(cmd["timeout"])  # type: ignore[arg-type]
    cap = int(cmd["cap"])  # type: ignore[call-overload]
    forked = python_argv([str(a) for a in cmd["argv"]], dict(cmd["env"]))  # type: ignore[attr-defined,call-overload]
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        child(cmd, out_w, err_w, forked, home)
    os.close(out_w)
    os.close(err_w)
    bufs = {out_r: bytearray(), err_r: bytearray()}
    seen = {out_r: 0, err_r: 0}
    status: int | None = None
    timed_out = capped = False
    pidfd = os.pidfd_open(pid)
    open_fds = [out_r, err_r]
    try:
        while status is None:
            left = start + timeout - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            ready, _, _ = select.select([*open_fds, pidfd], [], [], left)
            for fd in ready:
                if fd == pidfd:
                    status = os.waitpid(pid, 0)[1]
                    continue
                chunk = os.read(fd, CHUNK)
                if not chunk:
                    open_fds.remove(fd)
                    continue
                seen[fd] += len(chunk)
                bufs[fd] += chunk[: max(0, cap - len(bufs[fd]))]
            if seen[out_r] > cap:
                capped = True
                break
        end_all()  # the command's tree ends with it, as its own sandbox's would
        for fd in open_fds:  # every writer is gone: what is left in the pipes, then EOF
            while chunk := os.read(fd, CHUNK):
                bufs[fd] += chunk[: max(0, cap - len(bufs[fd]))]
    finally:
        for fd in (out_r, err_r, pidfd):
            os.close(fd)
    exit_code: int | None = None
    if status is not None and not timed_out and not capped:
        exit_code = os.waitstatus_to_exitcode(status)
        if exit_code < 0:
            exit_code = signal_base - exit_code if signal_base else exit_code
    return {
        "exit": exit_code,
        "timed_out": timed_out,
        "capped": capped,
        "forked": forked is not None,
        "duration_s": time.monotonic() - start,
        "stdout": base64.b64encode(bytes(bufs[out_r])).decode(),
        "stderr": base64.b64encode(bytes(bufs[err_r])).decode(),
    }


def serve(request: dict[str, object], held: dict[str, dict[str, "Entry"]], *, fresh: bool) -> None:
    """Run one run's commands in turn, each from the state the run began with.

    `held`: the folders as the server began (put back first when `fresh`: a warm server's earlier
    run must leave nothing, not even what its own reset could have missed); the run's own roots
    (the workspace of a warm server) are captured now."""
    ipc = bool(CONFIG.get("ipc"))
    commands: list[dict[str, object]] = list(request.get("checks") or [])  # type: ignore[call-overload]
    if fresh:
        for root, want in held.items():
            reset(root, want)
    if ipc:
        clean_ipc()
    try:
        own = [str(r) for r in request.get("roots") or [] if os.path.isdir(str(r))]  # type: ignore[attr-defined]
        kept = {**held, **{root: capture(root) for root in own}}
    except (TooBig, OSError) as exc:
        emit({"refused": f"cannot hold the writable folders: {exc}"})
        return
    gc.freeze()  # the copy is never collected: forked commands neither walk nor copy it
    home = CONFIG.get("home")
    signal_base = int(CONFIG.get("signal_base") or 0)  # type: ignore[call-overload]
    for n, cmd in enumerate(commands):
        row = run_one(cmd, None if home is None else str(home), signal_base)
        for root, want in kept.items():
            reset(root, want)  # the next command (and the caller's own reading) sees the run's start
        if ipc:
            clean_ipc()
        emit({"index": n, **row})
    emit({"end": len(commands)})


def _refusal() -> str | None:
    """Why this server may not run commands here, or None."""
    try:
        own_pid, own_ipc = os.readlink("/proc/self/ns/pid"), os.readlink("/proc/self/ns/ipc")
    except OSError as exc:
        return f"cannot read the namespaces: {exc}"
    if own_pid == CONFIG.get("host_pidns"):
        return "not in a pid namespace of its own"
    if CONFIG.get("ipc") and own_ipc == CONFIG.get("host_ipcns"):
        return "not in an IPC namespace of its own"
    if CONFIG.get("warm"):
        if os.getpid() != 1:
            return "a server kept across runs must be the sandbox's init (pid 1)"
        if not CONFIG.get("ipc") or not mqueue_shown():
            return "a server kept across runs needs the sandbox's own IPC namespace, its queues shown"
    return None


def main() -> None:
    _LIBC.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    _LIBC.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    why = _refusal()
    if why is not None:
        emit({"refused": why})
        return
    roots = [str(r) for r in CONFIG.get("roots") or [] if os.path.isdir(str(r))]  # type: ignore[attr-defined]
    try:
        held = {root: capture(root) for root in roots}
    except (TooBig, OSError) as exc:
        emit({"refused": f"cannot hold the writable folders: {exc}"})
        return
    emit({"ready": 1, "preloaded": len(_KEEP - _BASELINE)})
    gc.freeze()  # what the server holds is never collected: forked commands neither walk nor copy it
    if not CONFIG.get("warm"):
        serve(_frame() or {}, held, fresh=False)
        return
    runs = 0
    while (header := _read(10)) is not None:
        pid = os.fork()
        if pid == 0:  # the run's own process: only it ever reads the run
            code = 1
            try:
                _LIBC.prctl(
                    PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0
                )  # not inherited: the run's orphans are its own
                body = _read(int(header))
                if body is not None:
                    serve(json.loads(body), held, fresh=True)
                    code = 0
            except BaseException as exc:  # the run cannot go on; the server will not take another
                emit({"error": f"{type(exc).__name__}: {exc}"})
            finally:
                os._exit(code)
        status = reap(pid)
        end_all()  # as init: nothing of the run survives it
        if status != 0:
            emit({"broken": status})
            return
        runs += 1
        emit({"idle": runs})
