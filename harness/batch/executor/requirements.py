"""What a job needs from the machine that runs it: `agent.requires`, parsed and checked.

An entry of `agent.requires` is one of

- `NAME` — an executable on the worker's PATH (an agent CLI, a tool);
- `NAME>=1.2` (also `>`, `==`, `<=`, `<`) — the same, and the first version number that
  `NAME --version` prints must compare as stated;
- `resource:TAG` or `resource:TAG=N` — a Dask resource: only workers started with
  `--resources TAG=...` are given the job (the local pool ignores it).

A machine lacking an executable or a version makes the trial `failed_to_run` with the reason;
resources never fail a trial, they decide where it goes.
"""

from __future__ import annotations

import functools
import operator
import re
import shutil
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass

_SPEC = re.compile(r"^(?P<name>[A-Za-z0-9_.+-]+?)\s*(?:(?P<op>>=|<=|==|>|<)\s*(?P<version>\d+(?:\.\d+)*))?$")
_RESOURCE = re.compile(r"^resource:(?P<tag>[A-Za-z0-9_.-]+)(?:=(?P<amount>\d+(?:\.\d+)?))?$")
_VERSION = re.compile(r"\d+(?:\.\d+)+|\d+")
_OPS: dict[str, Callable[[tuple[int, ...], tuple[int, ...]], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    "==": operator.eq,
    ">": operator.gt,
    "<": operator.lt,
}


class RequirementError(ValueError):
    """An entry of agent.requires that is not written as documented."""


@dataclass(frozen=True)
class Executable:
    """An executable the machine must have, optionally at some version."""

    name: str
    op: str | None = None
    version: tuple[int, ...] = ()

    def __str__(self) -> str:
        return self.name if self.op is None else f"{self.name}{self.op}{'.'.join(map(str, self.version))}"


@dataclass(frozen=True)
class Requirements:
    """A job's requirements, split by who enforces them."""

    executables: tuple[Executable, ...] = ()
    resources: tuple[tuple[str, float], ...] = ()
    """(Dask resource tag, amount) pairs; the scheduler routes the job by them."""


def parse(entries: Sequence[str]) -> Requirements:
    """Parse `agent.requires`; raises RequirementError on an entry it cannot read."""
    executables: list[Executable] = []
    resources: dict[str, float] = {}
    for entry in entries:
        text = entry.strip()
        res = _RESOURCE.match(text)
        if res is not None:
            resources[res["tag"]] = float(res["amount"] or 1)
            continue
        spec = _SPEC.match(text)
        if spec is None:
            raise RequirementError(
                f"requirement {entry!r} is not NAME, NAME>=VERSION (>, ==, <=, <) or resource:TAG[=N]"
            )
        version = tuple(int(p) for p in spec["version"].split(".")) if spec["version"] else ()
        executables.append(Executable(name=spec["name"], op=spec["op"], version=version))
    return Requirements(executables=tuple(executables), resources=tuple(sorted(resources.items())))


@functools.lru_cache(maxsize=256)
def installed_version(path: str) -> tuple[int, ...] | None:
    """The first version number `path --version` prints, or None when it prints none."""
    try:
        done = subprocess.run(
            [path, "--version"], capture_output=True, timeout=30, check=False, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.SubprocessError):
        return None
    found = _VERSION.search((done.stdout + done.stderr).decode("utf-8", "replace"))
    return tuple(int(p) for p in found.group(0).split(".")) if found else None


def _pad(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    width = max(len(a), len(b))
    return a + (0,) * (width - len(a)), b + (0,) * (width - len(b))


def missing(requirements: Requirements, *, path: str | None = None) -> list[str]:
    """Why this machine cannot run the job: one line per unmet executable (empty when all met).

    Args:
        requirements: Parsed requirements.
        path: PATH to search (default: this process's).
    """
    problems: list[str] = []
    for exe in requirements.executables:
        found = shutil.which(exe.name, path=path)
        if found is None:
            problems.append(f"{exe.name}: not found on PATH")
            continue
        if exe.op is None:
            continue
        have = installed_version(found)
        if have is None:
            problems.append(f"{exe.name}: `{exe.name} --version` printed no version (need {exe})")
        elif not _OPS[exe.op](*_pad(have, exe.version)):
            problems.append(f"{exe.name}: version {'.'.join(map(str, have))} does not satisfy {exe}")
    return problems


def parse_resources(text: str) -> tuple[tuple[str, float], ...]:
    """`GPU=1,mem=4e9` (commas or spaces) as sorted (name, amount) pairs; raises RequirementError."""
    pairs: dict[str, float] = {}
    for item in text.replace(",", " ").split():
        name, sep, amount = item.partition("=")
        try:
            value = float(amount) if sep else 1.0
        except ValueError:
            value = -1.0
        if not name or value <= 0:
            raise RequirementError(f"resource {item!r} is not NAME=AMOUNT with a positive amount")
        pairs[name] = value
    return tuple(sorted(pairs.items()))
