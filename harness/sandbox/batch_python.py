"""Commands that run this interpreter, forked from the batch server as a fresh interpreter would run
them: the third part of the batch server's source.

`harness.sandbox.batch.server_source` runs this file after `batch_server.py` and `batch_reset.py`
as one `python -c` program inside the sandbox (never imported there; the standard library only).
A command is forked (`python_argv`) when it runs the server's own interpreter, by name on its PATH
or by absolute path, with the server's interpreter-level environment, as `python [-P] -m mod`,
`-c code` or a script, given as an argv or as a shell string of plain words; the forked child
then becomes it (`become_python`) with what the server preloaded already imported.
"""

import contextlib
import os
import sys
import types
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the first part of the program
    from harness.sandbox.batch_server import _KEEP

STARTUP = ("PYTHON", "LANG", "LC_")
"""Environment variables read when an interpreter starts: a fork needs the server's own values."""
STARTUP_ENV = {k: v for k, v in os.environ.items() if k.startswith(STARTUP)}


def python_argv(argv: list[str], env: dict[str, str]) -> list[str] | None:
    """The interpreter arguments when argv runs this interpreter (by name or absolute path) with
    `-m mod`, `-c code` or a script, else None."""
    if len(argv) >= 3 and os.path.basename(argv[0]) in ("bash", "sh", "dash") and argv[1] == "-c":
        if len(argv) != 3 or not _plain(argv[2]):
            return None
        argv = argv[2].split()
    if len(argv) < 2 or not os.path.basename(argv[0]).startswith("python"):
        return None
    found = _which(argv[0], env.get("PATH", ""))
    if found is None or os.path.realpath(found) != os.path.realpath(sys.executable):
        return None
    if os.path.dirname(found) != os.path.dirname(sys.executable):  # another environment built on it
        return None
    if {k: v for k, v in env.items() if k.startswith(STARTUP)} != STARTUP_ENV:
        return None
    rest = argv[1:]
    flag, rest = (rest[:1], rest[1:]) if rest[:1] == ["-P"] else ([], rest)  # -P: no unsafe path first
    if rest and ((rest[0] in ("-m", "-c") and len(rest) >= 2) or not rest[0].startswith("-")):
        return [*flag, *rest]
    return None


def _plain(command: str) -> bool:
    """A shell string that is nothing but words: no quoting, expansion, redirection or operator
    (an `=` past the first word is a literal: only before the command does one assign)."""
    allowed = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:,+@%=- \t")
    return bool(command.strip()) and set(command) <= allowed and "=" not in command.split()[0]


def _which(name: str, path: str) -> str | None:
    if "/" in name:  # a path, not a name to look up: an absolute one only (not the workspace's)
        return name if os.path.isabs(name) else None
    for folder in path.split(os.pathsep):
        candidate = os.path.join(folder or ".", name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


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
    safe, args = (True, args[1:]) if args[0] == "-P" else (bool(env.get("PYTHONSAFEPATH")), args)
    code = 0
    try:
        try:
            if args[0] == "-m":
                sys.argv = ["-m", *args[2:]]
                sys.path[:0] = [] if safe else [os.getcwd()]
                runpy._run_module_as_main(args[1], alter_argv=True)  # type: ignore[attr-defined]
            elif args[0] == "-c":
                sys.argv = ["-c", *args[2:]]
                sys.path[:0] = [] if safe else [""]
                exec(compile(args[1], "<string>", "exec"), main.__dict__)
            else:
                script = os.path.abspath(args[0])  # as a fresh interpreter names its script
                sys.argv = list(args)
                sys.path[:0] = [] if safe else [os.path.dirname(script)]
                with open(script, "rb") as fh:
                    source = fh.read()
                main.__dict__.update({"__file__": script, "__cached__": None})
                exec(compile(source, script, "exec"), main.__dict__)  # the check's own script
        except SystemExit as exc:
            code = _exit_code(exc.code)
        except BaseException as exc:  # what the interpreter prints for an uncaught error
            # the first frame is this function's own, which a fresh interpreter has not (a `-c`
            # command's frames are "<string>" as this server's are: the frame is skipped, not the name)
            tb = exc.__traceback__.tb_next if exc.__traceback__ is not None else None
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
