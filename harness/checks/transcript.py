"""`transcript`: what the agent said or did, from the adapter's normalised transcript.

Parameters: `contains` and/or `absent` (text alternatives, or regexes with `regex: true`),
`role` and `tool` (only rows whose `role` / `tool` (or `name`) equal these), `min`
(default 1) and `max` for `contains`. Without a transcript (the adapter gives none) the
check is `unavailable`, never a pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from compiler.contract import CheckSpec
from harness.checks._run import bounds, count_in_bounds, matchers, run_view, text_of
from harness.checks.base import CheckContext, CheckError, CheckUnavailable, Verdict

if TYPE_CHECKING:
    from harness.artifacts.run_view import RunView


def evaluate(params: Mapping[str, Any], view: RunView) -> Verdict:
    """The transcript predicate on one run."""
    if not view.transcript.present:
        raise CheckUnavailable("the adapter gave no transcript")
    if "contains" not in params and "absent" not in params:
        raise CheckError("a transcript predicate needs contains or absent")
    regex = bool(params.get("regex", False))
    rows = [
        r
        for r in view.transcript.rows
        if ("role" not in params or r.get("role") == params["role"])
        and ("tool" not in params or params["tool"] in (r.get("tool"), r.get("name")))
    ]
    texts = [text_of(r) for r in rows]
    if "absent" in params:
        bad = matchers(params["absent"], regex=regex)
        hits = sum(1 for t in texts if any(p.search(t) for p in bad))
        if hits:
            return Verdict(False, f"{hits} transcript row(s) contain {params['absent']!r}")
        if "contains" not in params:
            return Verdict(True, f"no transcript row contains {params['absent']!r}")
    good = matchers(params["contains"], regex=regex)
    n = sum(1 for t in texts if any(p.search(t) for p in good))
    low, high = bounds(params)
    return Verdict(*count_in_bounds(n, low, high, f"transcript rows containing {params['contains']!r}"))


class TranscriptCheck:
    """Rows of the transcript that contain (or must not contain) a text."""

    name = "transcript"

    def run(self, spec: CheckSpec, workspace: Path, ctx: CheckContext) -> Verdict:
        return evaluate(spec.params, run_view(ctx, self.name))
