"""`absent`: the files hold the text (any alternative) at most `max` (default 0) times."""

from __future__ import annotations

from pathlib import Path

from compiler.contract import CheckSpec
from harness.checks import _text
from harness.checks.base import CheckContext, Verdict, param


class AbsentCheck:
    """Text or regex alternatives that must not occur (more than max times)."""

    name = "absent"

    def run(self, spec: CheckSpec, workspace: Path, ctx: CheckContext) -> Verdict:
        hits = _text.search(spec, workspace, ctx)
        if hits.missing is not None:
            return Verdict(False, hits.missing)
        high = int(param(spec, "max", 0))
        low = int(param(spec, "min", 0))
        needles = _text.describe(spec)
        if hits.total > high:
            return Verdict(
                False, f"{needles} found {hits.total} time(s) (max {high}) at {', '.join(hits.where[:5])}"
            )
        if hits.total < low:
            return Verdict(False, f"{needles} found {hits.total} time(s), expected at least {low}")
        return Verdict(True, f"{needles} found {hits.total} time(s) (max {high})")
