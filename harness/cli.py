"""The `assay` command: one entry point, one subcommand module each.

Each module in `harness.commands` defines `HELP`, `configure(parser)` and
`execute(args) -> int`. Modules keep their heavy imports inside `execute`, so
`assay --help` stays fast. Exceptions become exit codes here and only here:
0 ok, 1 failures, 2 spec or usage error, 3 nothing selected, 130 interrupted. Spec errors
(`compiler.errors.SpecErrors`, every problem at once) print as text on stderr, or in the
format a command put in `args.spec_format` (`assay compile --format json|github`, on stdout).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from types import ModuleType

from compiler.errors import SpecErrors, render
from harness.errors import AssayError

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
)


def _load(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(f"harness.commands.{name}")
    except ModuleNotFoundError as exc:
        if exc.name == f"harness.commands.{name}":
            return None  # not built yet: the command is simply absent
        raise


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser, one subparser per available command."""
    parser = argparse.ArgumentParser(
        prog="assay",
        description="Measure whether a tool makes a coding agent finish realistic work correctly more often.",
    )
    parser.add_argument("--project", default=".", help="project root (the folder holding specs/); default: .")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        module = _load(name)
        if module is None:
            continue
        child = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.configure(child)
        child.set_defaults(_execute=module.execute)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI and return its exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args._execute(args)
        return code
    except KeyboardInterrupt:
        print("assay: interrupted", file=sys.stderr)
        return 130
    except SpecErrors as exc:
        fmt = getattr(args, "spec_format", "text")
        print(render(exc.errors, fmt), file=sys.stderr if fmt == "text" else sys.stdout)
        return 2
    except AssayError as exc:
        print(f"assay: error: {exc}", file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main())
