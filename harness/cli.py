"""The `assay` command: one entry point, one subcommand module each.

Each module in `harness.commands` defines `HELP`, `configure(parser)` and
`execute(args) -> int`, and may define `INTERRUPTED`: what an interrupted run of it left, said
after `assay: interrupted`. Modules keep their heavy imports inside `execute`, so
`assay --help` stays fast. Exceptions become exit codes here and only here:
0 ok, 1 failures, 2 spec or usage error, 3 nothing selected, 4 run tree held by another
runner, 74 run tree unwritable (full disk, read-only), 130 interrupted (SIGINT, SIGTERM, SIGHUP).
Spec errors (`compiler.errors.SpecErrors`, every problem at once) print as text on stderr, or in the
format a command put in `args.spec_format` (`assay compile --format json|github`, on stdout).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import keyword
import os
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from types import FrameType, ModuleType

from compiler.errors import SpecErrors, render
from harness.errors import IO_ERRNOS, AssayError, TreeUnwritable, io_detail

COMMANDS = (
    "compile",
    "validate",
    "schema",
    "explain",
    "new",
    "run",
    "matrix",
    "grade",
    "report",
    "results",
    "view",
    "plan",
    "import",
)


def _load(name: str) -> ModuleType | None:
    module = f"harness.commands.{name}_" if keyword.iskeyword(name) else f"harness.commands.{name}"
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name == module:
            return None  # not built yet: the command is simply absent
        raise


def requested(argv: Sequence[str]) -> str | None:
    """The command argv names (after the global options), or None (none, help, or not a command)."""
    args = iter(argv)
    for arg in args:
        if arg == "--project":
            next(args, None)
        elif not arg.startswith("-"):
            return arg if arg in COMMANDS else None
        elif not arg.startswith("--project="):
            return None  # --help, or an option the parser will refuse with the full usage
    return None


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The argument parser, one subparser per available command; only: that command's alone (its
    module is the only one imported: `assay report` does not import the runner)."""
    parser = argparse.ArgumentParser(
        prog="assay",
        description="Measure whether a tool makes a coding agent finish realistic work correctly more often.",
    )
    parser.add_argument("--project", default=".", help="project root (the folder holding specs/); default: .")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in (only,) if only else COMMANDS:
        module = _load(name)
        if module is None:
            continue
        child = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.configure(child)
        child.set_defaults(_execute=module.execute, _interrupted=getattr(module, "INTERRUPTED", None))
    return parser


def _stop(signum: int, _frame: FrameType | None) -> None:
    """SIGTERM and SIGHUP stop a run the way Ctrl-C does: running trials record themselves as
    interrupted and kill their agents; the tree stays resumable."""
    raise KeyboardInterrupt(signal.Signals(signum).name)


@contextlib.contextmanager
def _stop_signals() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set handlers (the CLI called from a test's thread)
        return
    previous = {s: signal.signal(s, _stop) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _say(text: str) -> None:
    if sys.stderr is None:  # started with stderr closed: the exit code still tells
        return
    with contextlib.suppress(OSError, ValueError):
        print(text, file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI and return its exit code."""
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(requested(argv))
    args = parser.parse_args(argv)
    try:
        with _stop_signals():
            code: int = args._execute(args)
        return code
    except KeyboardInterrupt as exc:
        why = f" ({exc.args[0]})" if exc.args else ""
        after = f"; {args._interrupted}" if args._interrupted else ""  # what the command left, if it says
        _say(f"assay: interrupted{why}{after}")
        return 130
    except SpecErrors as exc:
        fmt = getattr(args, "spec_format", "text")
        print(render(exc.errors, fmt), file=sys.stderr if fmt == "text" else sys.stdout)
        return 2
    except AssayError as exc:
        _say(f"assay: error: {exc}")
        return exc.exit_code
    except BrokenPipeError:
        # Whoever read the output stopped (`assay compile | head`): end quietly, as a program killed
        # by SIGPIPE would, and let nothing more be written to the closed pipe on the way out.
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    except OSError as exc:
        if exc.errno not in IO_ERRNOS:
            raise  # a bug, or a file the command should have told apart itself
        # A full, read-only or failing disk under any command: one line, as `assay matrix` says it.
        _say(f"assay: error: {io_detail(exc)}")
        return TreeUnwritable.exit_code


if __name__ == "__main__":
    sys.exit(main())
