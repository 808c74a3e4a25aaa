"""`answer`: a key of the agent's `answer.json` equals a value or matches a regex.

Parameters: `key` (dotted path; a numeric part indexes a list), `equals` (any JSON
value; strings compare with surrounding whitespace stripped) or `matches` (a regex
searched in the value, which is JSON-encoded when it is not a string), and `file`
(workspace-relative, default the context's answer file or `answer.json`). A missing
or malformed answer, or a missing key, fails: the agent did not answer.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from compiler.contract import CheckSpec
from harness.checks.base import CheckContext, CheckError, Verdict, inside, param, same_value

_MISSING = object()


class AnswerCheck:
    """One key of answer.json, compared with the expected answer."""

    name = "answer"

    def run(self, spec: CheckSpec, workspace: Path, ctx: CheckContext) -> Verdict:
        key = str(param(spec, "key", required=True))
        if "file" in spec.params:
            path = inside(workspace, str(spec.params["file"]))
        else:
            path = ctx.answer_file or inside(workspace, "answer.json")
        if not path.is_file():
            return Verdict(False, f"no answer: {path.name} was not written")
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:  # deep: `[[[[...`
            return Verdict(False, f"{path.name} is not valid JSON: {exc}")
        value = lookup(doc, key)
        if value is _MISSING:
            return Verdict(False, f"{path.name} has no key {key!r}")
        shown = json.dumps(value)
        if "equals" in spec.params:
            expected = spec.params["equals"]
            if same_value(value, expected):
                return Verdict(True, f"{key} = {shown}")
            return Verdict(False, f"{key} = {shown}, expected {json.dumps(expected)}")
        if "matches" in spec.params:
            pattern = str(spec.params["matches"])
            text = value if isinstance(value, str) else shown
            try:
                hit = re.search(pattern, text)
            except re.error as exc:
                raise CheckError(f"check {spec.id!r}: bad regex {pattern!r}: {exc}") from None
            if hit:
                return Verdict(True, f"{key} = {shown} matches {pattern!r}")
            return Verdict(False, f"{key} = {shown} does not match {pattern!r}")
        raise CheckError(f"check {spec.id!r} (answer) needs equals or matches")


def lookup(doc: Any, key: str) -> Any:
    """The value at a dotted key, or _MISSING."""
    value = doc
    for part in key.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.lstrip("-").isdigit() and -len(value) <= int(part) < len(value):
            value = value[int(part)]
        else:
            return _MISSING
    return value
