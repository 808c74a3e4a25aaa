"""The inside of a command batch: one sandbox launch runs several commands in turn.

This file is run as the source of `python -c` inside the sandbox (`harness.sandbox.batch`), never
imported there, so it uses the standard library only and lands nothing in the commands'
`sys.modules` that a fresh interpreter would not have. It reads one JSON request on stdin and
writes one JSON line per command on stdout, as each ends.

Each command starts from the same state: before it, every process the previous one left is
killed (`kill(-1)` in the sandbox's own pid namespace; the server is a subreaper, so it reaps them
all), and the writable folders (`roots`: the workspace, HOME, /tmp...) are put back as they were
when the batch began, contents, modes and times, from a copy the server holds in its memory. The
server is not dumpable, so a command cannot read or write its memory or descriptors through
/proc or ptrace. A command whose `python` is this interpreter, started with the same
interpreter-level environment, is forked from the server with `preload` already imported (pytest
costs more to import than most test suites take to run) instead of being exec'd; anything else is
exec'd as it is.

The server refuses to run (`{"refused": why}`) outside a pid namespace of its own, where
`kill(-1)` would reach the host's processes; the caller then runs the commands one by one.
"""

import sys

_BASELINE = frozenset(sys.modules)

import os  # noqa: E402  (sys.modules is read first: what a fresh interpreter has)


def _preload(names: list[str]) -> None:
    cwd = os.getcwd()
    sys.path[:] = [p for p in sys.path if p not in ("", cwd)]  # never the workspace's modules
    for name in names:
        try:
            __import__(name)
        except Exception:  # a preload is an optimisation; the command imports it again
            continue


def _request() -> dict[str, object]:
    import json

    data = b""
    while chunk := os.read(0, 1 << 20):
        data += chunk
    doc = json.loads(data)
    assert isinstance(doc, dict)
    return doc


REQUEST = _request()
_preload([str(n) for n in REQUEST.get("preload") or []])  # type: ignore[attr-defined]
_KEEP = frozenset(sys.modules)

import base64  # noqa: E402
import contextlib  # noqa: E402
import ctypes  # noqa: E402
import json  # noqa: E402
import select  # noqa: E402
import signal  # noqa: E402
import stat  # noqa: E402
import time  # noqa: E402
import types  # noqa: E402

_LIBC = ctypes.CDLL(None, use_errno=True)
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
CHUNK = 1 << 16
MAX_BYTES = 64 << 20
"""A tree bigger than this is not held in memory: the server refuses and the caller runs one by one."""
MAX_ENTRIES = 20000
STARTUP = ("PYTHON", "LANG", "LC_")
"""Environment variables read when an interpreter starts: a fork needs the server's own values."""

Entry = tuple[str, int, bytes, int]
"""kind ("d", "f", "l"), mode, content or link target, mtime_ns."""


def emit(row: dict[str, object]) -> None:
    data = (json.dumps(row) + "\n").encode()
    while data:
        data = data[os.write(1, data) :]


class TooBig(Exception):
    pass


def capture(root: str) -> dict[str, Entry]:
    """Every entry under root (not crossing into other mounts), content included."""
    top = os.lstat(root)
    found: dict[str, Entry] = {"": ("d", stat.S_IMODE(top.st_mode), b"", top.st_mtime_ns)}
    total = 0
    device = top.st_dev
    stack = [""]
    while stack:
        rel = stack.pop()
        for name in sorted(os.listdir(os.path.join(root, rel) if rel else root)):
            sub = os.path.join(rel, name) if rel else name
            path = os.path.join(root, sub)
            st = os.lstat(path)
            if st.st_dev != device:
                continue  # a mount inside (read-only toolchain, a scenario mount): not ours to reset
            if stat.S_ISDIR(st.st_mode):
                found[sub] = ("d", stat.S_IMODE(st.st_mode), b"", st.st_mtime_ns)
                stack.append(sub)
            elif stat.S_ISLNK(st.st_mode):
                found[sub] = ("l", 0, os.fsencode(os.readlink(path)), 0)
            elif stat.S_ISREG(st.st_mode):
                with open(path, "rb") as fh:
                    data = fh.read()
                total += len(data)
                found[sub] = ("f", stat.S_IMODE(st.st_mode), data, st.st_mtime_ns)
            else:
                found[sub] = ("o", 0, b"", 0)  # a FIFO or socket the batch began with: removed on reset
            if total > MAX_BYTES or len(found) > MAX_ENTRIES:
                raise TooBig(root)
    return found


def _remove(path: str) -> None:
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):
        os.unlink(path)
        return
    _open_up(path)
    for name in os.listdir(path):
        _remove(os.path.join(path, name))
    os.rmdir(path)


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "d"
    if stat.S_ISLNK(mode):
        return "l"
    return "f" if stat.S_ISREG(mode) else "o"


def reset(root: str, want: dict[str, Entry]) -> None:
    """Put root back to `want`: extra entries removed, changed ones rewritten, modes and times set."""
    device = os.lstat(root).st_dev
    stack = [""]
    while stack:  # remove what was not there, and what changed kind
        rel = stack.pop()
        folder = os.path.join(root, rel) if rel else root
        _open_up(folder)
        for name in os.listdir(folder):
            sub = os.path.join(rel, name) if rel else name
            st = os.lstat(os.path.join(root, sub))
            if st.st_dev != device:
                continue
            kind, had = _kind(st.st_mode), want.get(sub)
            if had is None or had[0] != kind or kind == "o":
                _remove(os.path.join(root, sub))
            elif kind == "d":
                stack.append(sub)
    for sub, (kind, _mode, data, _mtime) in sorted(want.items()):  # parents before children
        path = os.path.join(root, sub)
        if kind == "d" and not os.path.lexists(path):
            os.mkdir(path, 0o700)
        elif kind == "l" and (not os.path.lexists(path) or os.fsencode(os.readlink(path)) != data):
            if os.path.lexists(path):
                os.unlink(path)
            os.symlink(data, path)
        elif kind == "f":
            same = False
            if os.path.lexists(path):
                os.chmod(path, 0o600)
                with open(path, "rb") as fh:
                    same = fh.read() == data
            if not same:
                with open(path, "wb") as fh:
                    fh.write(data)
    for sub, (kind, mode, _data, mtime) in sorted(want.items(), reverse=True):  # children first
        path = os.path.join(root, sub)
        if kind in ("d", "f") and os.lstat(path).st_uid == os.getuid():  # /tmp itself is root's
            os.chmod(path, mode)
            os.utime(path, ns=(mtime, mtime), follow_symlinks=False)


def _open_up(folder: str) -> None:
    """Let the server list and change a folder of its own a command made unreadable."""
    st = os.lstat(folder)
    if st.st_uid == os.getuid() and stat.S_IMODE(st.st_mode) & 0o700 != 0o700:
        os.chmod(folder, stat.S_IMODE(st.st_mode) | 0o700)


def end_all() -> None:
    """Kill every process of the namespace but the server and its init, and reap them."""
    while True:
        with contextlib.suppress(ProcessLookupError):
            os.kill(-1, signal.SIGKILL)
        try:
            while os.waitpid(-1, 0):
                pass
        except ChildProcessError:
            return


def python_argv(argv: list[str], env: dict[str, str]) -> list[str] | None:
    """The interpreter arguments when argv runs this interpreter with `-m mod` or a script, else None."""
    if len(argv) >= 3 and os.path.basename(argv[0]) in ("bash", "sh", "dash") and argv[1] == "-c":
        if len(argv) != 3 or not _plain(argv[2]):
            return None
        argv = argv[2].split()
    if len(argv) < 2 or "/" in argv[0] or not argv[0].startswith("python"):
        return None
    found = _which(argv[0], env.get("PATH", ""))
    if found is None or os.path.realpath(found) != os.path.realpath(sys.executable):
        return None
    if os.path.dirname(found) != os.path.dirname(sys.executable):
        return None  # another environment built on the same interpreter
    if {k: v for k, v in env.items() if k.startswith(STARTUP)} != STARTUP_ENV:
        return None
    rest = argv[1:]
    if (rest[0] == "-m" and len(rest) >= 2) or not rest[0].startswith("-"):
        return rest
    return None


def _plain(command: str) -> bool:
    """A shell string that is nothing but words: no quoting, expansion, redirection or operator."""
    allowed = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:,+@%- \t")
    return bool(command.strip()) and set(command) <= allowed and "=" not in command.split()[0]


def _which(name: str, path: str) -> str | None:
    for folder in path.split(os.pathsep):
        candidate = os.path.join(folder or ".", name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


STARTUP_ENV = {k: v for k, v in os.environ.items() if k.startswith(STARTUP)}


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


def become_python(args: list[str], env: dict[str, str]) -> int:
    """Run `python <args>` in this (forked) interpreter as a fresh one would; the exit status."""
    import atexit
    import runpy
    import traceback

    os.environ.clear()
    os.environ.update(env)
    sys.dont_write_bytecode = bool(env.get("PYTHONDONTWRITEBYTECODE"))
    for name in [m for m in sys.modules if m not in _KEEP]:
        del sys.modules[name]
    if "random" in sys.modules:
        sys.modules["random"].seed()
    main = types.ModuleType("__main__")
    main.__dict__["__builtins__"] = __builtins__
    sys.modules["__main__"] = main
    code = 0
    try:
        try:
            if args[0] == "-m":
                sys.argv = ["-m", *args[2:]]
                sys.path.insert(0, os.getcwd())
                runpy._run_module_as_main(args[1], alter_argv=True)  # type: ignore[attr-defined]
            else:
                script = os.path.abspath(args[0])  # as a fresh interpreter names its script
                sys.argv = list(args)
                sys.path.insert(0, os.path.dirname(script))
                with open(script, "rb") as fh:
                    source = fh.read()
                main.__dict__.update({"__file__": script, "__cached__": None})
                exec(compile(source, script, "exec"), main.__dict__)  # the check's own script
        except SystemExit as exc:
            code = _exit_code(exc.code)
        except BaseException as exc:  # what the interpreter prints for an uncaught error
            tb = exc.__traceback__
            while tb is not None and tb.tb_frame.f_code.co_filename == "<string>":
                tb = tb.tb_next  # the server's own frames: a fresh interpreter has none
            traceback.print_exception(type(exc), exc, tb)
            code = 1
        if "threading" in sys.modules:
            sys.modules["threading"]._shutdown()
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):  # a closed stream flushes nothing
                stream.flush()
    return code


def _exit_code(value: object) -> int:
    if value is None:
        return 0
    if isinstance(value, int):
        return value & 0xFF
    print(value, file=sys.stderr)
    return 1


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


def main() -> None:
    _LIBC.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    _LIBC.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    try:
        own_ns = os.readlink("/proc/self/ns/pid")
    except OSError as exc:
        emit({"refused": f"cannot read the pid namespace: {exc}"})
        return
    if own_ns == REQUEST.get("host_pidns"):
        emit({"refused": "not in a pid namespace of its own"})
        return
    roots = [str(r) for r in REQUEST.get("roots") or [] if os.path.isdir(str(r))]  # type: ignore[attr-defined]
    try:
        kept = {root: capture(root) for root in roots}
    except (TooBig, OSError) as exc:
        emit({"refused": f"cannot hold the writable folders: {exc}"})
        return
    home = REQUEST.get("home")
    signal_base = int(REQUEST.get("signal_base") or 0)  # type: ignore[call-overload]
    commands: list[dict[str, object]] = list(REQUEST["checks"])  # type: ignore[call-overload]
    emit({"ready": len(commands), "preloaded": len(_KEEP - _BASELINE)})
    for n, cmd in enumerate(commands):
        row = run_one(cmd, None if home is None else str(home), signal_base)
        for root, want in kept.items():
            reset(root, want)  # the next command (and the caller's own reading) sees the batch's start
        emit({"index": n, **row})


main()
