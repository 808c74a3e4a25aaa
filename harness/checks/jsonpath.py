"""A small JSON path: `$`, `.key`, `['key']`, `[N]`, `[*]` and `.*` — enough to read a tool's report.

`select` returns every value the path reaches (a wildcard fans out), so a count of
findings is `len(select(doc, "$[*]"))` and a single value is `select(doc, "$.ok")[0]`.
"""

from __future__ import annotations

import re
from typing import Any

from harness.checks.base import CheckError

_TOKEN = re.compile(
    r"""\.(?P<key>[A-Za-z_][\w-]*)|\.\*|\[(?P<index>-?\d+)\]|\[\*\]|\[(?P<q>['"])(?P<qkey>.*?)(?P=q)\]"""
)

_WILD = object()


def parse(path: str) -> list[object]:
    """The steps of a path: str keys, int indexes, or the wildcard."""
    if not path.startswith("$"):
        raise CheckError(f"JSON path {path!r} must start with '$'")
    steps: list[object] = []
    pos = 1
    while pos < len(path):
        match = _TOKEN.match(path, pos)
        if match is None:
            raise CheckError(f"JSON path {path!r}: cannot read {path[pos:]!r} (use .key, [N], [*], ['key'])")
        if match.group("key") is not None:
            steps.append(match.group("key"))
        elif match.group("index") is not None:
            steps.append(int(match.group("index")))
        elif match.group("qkey") is not None:
            steps.append(match.group("qkey"))
        else:
            steps.append(_WILD)
        pos = match.end()
    return steps


def select(doc: Any, path: str) -> list[Any]:
    """Every value the path reaches in doc (missing keys reach nothing)."""
    current = [doc]
    for step in parse(path):
        following: list[Any] = []
        for value in current:
            if step is _WILD:
                if isinstance(value, list):
                    following.extend(value)
                elif isinstance(value, dict):
                    following.extend(value[k] for k in value)
            elif isinstance(step, int):
                if isinstance(value, list) and -len(value) <= step < len(value):
                    following.append(value[step])
            elif isinstance(value, dict) and step in value:
                following.append(value[step])
        current = following
    return current
