"""Shared reading for `contains` and `absent`: which files, which needles, how many hits.

Parameters: `file` (a path or list of paths) or `files` (a glob or list of globs, `**`
spans folders); `text` (a string or a list of alternatives, matched literally) or
`regex` (a pattern or a list of alternatives, multiline); `ignore_case`; `min`, `max`
(occurrences summed over all files and alternatives). Without `file` and `files` the
scenario's entry files are searched, as seed 000's "source text" checks do. A named file
that is missing, or globs that match nothing, fail the check: there is no text to assess.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

from compiler.contract import CheckSpec
from harness.checks.base import CheckContext, CheckError, as_list, glob_files, inside, param


class Hits(NamedTuple):
    """What a search found."""

    total: int
    where: list[str]
    missing: str | None


def patterns(spec: CheckSpec) -> list[re.Pattern[str]]:
    """The check's alternatives, compiled."""
    flags = re.MULTILINE | (re.IGNORECASE if param(spec, "ignore_case", False) else 0)
    texts = [str(t) for t in as_list(param(spec, "text"))]
    regexes = [str(r) for r in as_list(param(spec, "regex"))]
    if bool(texts) == bool(regexes):
        raise CheckError(f"check {spec.id!r} ({spec.kind}) needs exactly one of text or regex")
    try:
        return [re.compile(re.escape(t), flags) for t in texts] + [re.compile(r, flags) for r in regexes]
    except re.error as exc:
        raise CheckError(f"check {spec.id!r}: bad regex: {exc}") from None


def files(spec: CheckSpec, workspace: Path, ctx: CheckContext) -> tuple[list[Path], str | None]:
    """The files to search and, when there are none, why."""
    named = [str(f) for f in as_list(param(spec, "file"))]
    globs = [str(g) for g in as_list(param(spec, "files"))]
    if named and globs:
        raise CheckError(f"check {spec.id!r} ({spec.kind}) takes file or files, not both")
    if not named and not globs:
        if ctx.scenario is None or not ctx.scenario.entry:
            raise CheckError(
                f"check {spec.id!r} ({spec.kind}) needs file or files (the scenario has no entry)"
            )
        named = list(ctx.scenario.entry)
    found: list[Path] = []
    for name in named:
        path = inside(workspace, name)
        if not path.is_file():
            return [], f"{name} does not exist"
        found.append(path)
    for pattern in globs:
        found.extend(glob_files(workspace, pattern))
    if not found:
        return [], f"no file matches {', '.join(globs)}"
    return sorted(set(found)), None


def search(spec: CheckSpec, workspace: Path, ctx: CheckContext) -> Hits:
    """Count every occurrence of every alternative in every file."""
    compiled = patterns(spec)
    paths, missing = files(spec, workspace, ctx)
    if missing is not None:
        return Hits(0, [], missing)
    count = 0
    where: list[str] = []
    for path in paths:
        text = path.read_text(encoding="utf-8", errors="replace")
        for pattern in compiled:
            for match in pattern.finditer(text):
                count += 1
                line = text.count("\n", 0, match.start()) + 1
                where.append(f"{path.relative_to(workspace).as_posix()}:{line}")
    return Hits(total=count, where=where, missing=None)


def describe(spec: CheckSpec) -> str:
    """The needles, for messages."""
    items = as_list(param(spec, "text")) or as_list(param(spec, "regex"))
    return " | ".join(repr(str(i)) for i in items)
