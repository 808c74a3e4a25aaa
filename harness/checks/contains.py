"""`contains`: the files hold the text (any alternative) at least `min` (default 1) times."""

from __future__ import annotations

from pathlib import Path

from compiler.contract import CheckSpec
from harness.checks import _text
from harness.checks.base import CheckContext, Verdict, param


class ContainsCheck:
    """Text or regex alternatives that must occur, between min and max times."""

    name = "contains"

    def run(self, spec: CheckSpec, workspace: Path, ctx: CheckContext) -> Verdict:
        hits = _text.search(spec, workspace, ctx)
        if hits.missing is not None:
            return Verdict(False, hits.missing)
        low = int(param(spec, "min", 1))
        high = param(spec, "max")
        needles = _text.describe(spec)
        if hits.total < low:
            return Verdict(False, f"{needles} found {hits.total} time(s), expected at least {low}")
        if high is not None and hits.total > int(high):
            return Verdict(
                False,
                f"{needles} found {hits.total} time(s), expected at most {high}: {', '.join(hits.where[:5])}",
            )
        return Verdict(True, f"{needles} found {hits.total} time(s)")
