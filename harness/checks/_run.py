"""Shared plumbing of the kinds that read a run rather than only its workspace.

`trace`, `events`, `transcript`, `snapshot` and `judge` assess what the agent did (its
trace, its treatment's event log, its transcript, its entry over time). They get the
run from the grader through `CheckContext.extra["run"]` (a `harness.artifacts.run_view.RunView`)
or load it from `CheckContext.run_dir`; outside a run (validating a reference) there is
nothing to assess and the check is `unavailable`, never a pass.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from harness.checks.base import CheckContext, CheckError, CheckUnavailable, as_list

if TYPE_CHECKING:
    from harness.artifacts.run_view import RunView


def run_view(ctx: CheckContext, kind: str) -> RunView:
    """The run being graded, or CheckUnavailable when the check runs outside a run."""
    view = ctx.extra.get("run")
    if view is not None:
        return view  # type: ignore[no-any-return]
    if ctx.run_dir is None:
        raise CheckUnavailable(
            f"a {kind} check reads a run, and there is none (validation assesses only workspaces)"
        )
    from harness.artifacts.run_view import MissingArtifacts, load_view

    try:
        return load_view(ctx.run_dir)
    except (MissingArtifacts, OSError, ValueError) as exc:
        raise CheckError(f"cannot read the run: {exc}") from None


def bounds(params: Mapping[str, Any], *, default_min: int = 1) -> tuple[int, int | None]:
    """`min` (default 1: "it happened") and optional `max`."""
    low = params.get("min", default_min)
    high = params.get("max")
    if high is not None and "min" not in params:
        low = 0
    return int(low), None if high is None else int(high)


def count_in_bounds(n: int, low: int, high: int | None, what: str) -> tuple[bool, str]:
    """Whether a count lies in [low, high], with a message."""
    if n < low:
        return False, f"{what}: {n}, expected at least {low}"
    if high is not None and n > high:
        return False, f"{what}: {n}, expected at most {high}"
    return True, f"{what}: {n}" + ("" if high is None else f" (max {high})")


def matchers(value: Any, *, regex: bool) -> list[re.Pattern[str]]:
    """Text alternatives (literal, or regexes when `regex: true`), compiled."""
    try:
        return [re.compile(str(v) if regex else re.escape(str(v)), re.IGNORECASE) for v in as_list(value)]
    except re.error as exc:
        raise CheckError(f"bad regex: {exc}") from None


def text_of(value: Any) -> str:
    """Every string inside a JSON value, joined: what a transcript row says."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return "\n".join(text_of(v) for v in value.values())
    if isinstance(value, list | tuple):
        return "\n".join(text_of(v) for v in value)
    return "" if value is None else json.dumps(value)
