"""Spec errors: every problem in every file, collected before the compiler fails.

A `SpecError` names the file, line and column (1-based), the dotted key path inside
the document, a stable code, a message and an optional hint. Stage functions append
to a `Collector` and raise `SpecErrors` once at the end of a stage, so one run of
`assay compile` shows everything that is wrong, not the first thing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

ROOT_PATH = "(document)"
"""The key path printed for an error about a whole document (syntax, an empty file)."""


class Loc(NamedTuple):
    """A position in a spec file: project-relative path, 1-based line and column."""

    file: str
    line: int
    col: int


@dataclass(frozen=True, order=True)
class SpecError:
    """One problem in a spec, with where it is and what to do about it."""

    file: str
    line: int
    col: int
    path: str
    code: str
    message: str
    hint: str = ""

    @classmethod
    def at(cls, loc: Loc, path: str, code: str, message: str, hint: str = "") -> SpecError:
        """An error at a known location."""
        return cls(loc.file, loc.line, loc.col, path, code, message, hint)

    def text(self) -> str:
        """`file:line:col: error[CODE]: key.path: message` (the hint on its own line)."""
        head = f"{self.file}:{self.line}:{self.col}: error[{self.code}]: {self.path or ROOT_PATH}: {self.message}"
        return head + (f"\n  hint: {self.hint}" if self.hint else "")

    def github(self) -> str:
        """A GitHub Actions workflow command that annotates the line."""
        msg = f"{self.path or ROOT_PATH}: {self.message}"
        if self.hint:
            msg += f" (hint: {self.hint})"
        msg = msg.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
        return f"::error file={self.file},line={self.line},col={self.col},title={self.code}::{msg}"

    def as_dict(self) -> dict[str, object]:
        """The JSON form of one error."""
        return {
            "file": self.file,
            "line": self.line,
            "col": self.col,
            "path": self.path,
            "code": self.code,
            "message": self.message,
            "hint": self.hint,
        }


class SpecErrors(Exception):
    """The specs did not compile; `errors` holds every problem found, sorted by position."""

    def __init__(self, errors: Iterable[SpecError]) -> None:
        self.errors: tuple[SpecError, ...] = tuple(sorted(set(errors)))
        super().__init__(f"{len(self.errors)} spec error(s)")


@dataclass
class Collector:
    """Accumulates errors during a stage; `raise_if_any` ends the stage when there were some."""

    errors: list[SpecError] = field(default_factory=list)

    def add(self, loc: Loc, path: str, code: str, message: str, hint: str = "") -> None:
        """Record one error."""
        self.errors.append(SpecError.at(loc, path, code, message, hint))

    def extend(self, errors: Iterable[SpecError]) -> None:
        """Record several errors."""
        self.errors.extend(errors)

    def raise_if_any(self) -> None:
        """Raise `SpecErrors` with everything recorded so far, if anything was."""
        if self.errors:
            raise SpecErrors(self.errors)


def render(errors: Sequence[SpecError], fmt: str = "text") -> str:
    """All errors in one of the output formats: text, json or github."""
    if fmt == "json":
        return json.dumps({"errors": [e.as_dict() for e in errors]}, indent=2, sort_keys=True)
    if fmt == "github":
        return "\n".join(e.github() for e in errors)
    lines = [e.text() for e in errors]
    lines.append(f"{len(errors)} error(s)")
    return "\n".join(lines)


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """A hint naming the closest valid choice, or listing them when none is close."""
    import difflib

    options = sorted(set(choices))
    close = difflib.get_close_matches(name, options, n=1, cutoff=0.6)
    if close:
        return f"did you mean '{close[0]}'?"
    if not options:
        return ""
    shown = ", ".join(options[:12]) + (", ..." if len(options) > 12 else "")
    return f"valid: {shown}"
