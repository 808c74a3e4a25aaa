"""`trace`: what the agent ran of the traced tool, and when.

Parameters: `command` (a traced command name; default any), `subcommand` (a name or a
list), `exit` (an exit code or list: count only those), `after_last_write` (count only
invocations after the agent's last write to a watched file; with no write, every one
counts), `min` (default 1) and `max`. Expectations use the same predicate.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from compiler.contract import CheckSpec
from harness.checks._run import bounds, count_in_bounds, run_view
from harness.checks.base import CheckContext, Verdict, as_list

if TYPE_CHECKING:
    from harness.artifacts.run_view import RunView


def evaluate(params: Mapping[str, Any], view: RunView) -> Verdict:
    """The trace predicate on one run."""
    command = params.get("command")
    subs = {str(s) for s in as_list(params.get("subcommand"))}
    exits = {int(e) for e in as_list(params.get("exit"))}
    after = view.last_write if params.get("after_last_write") else None
    calls = [
        c
        for c in view.trace.invocations
        if (command is None or c.command == command)
        and (not subs or c.subcommand in subs)
        and (not exits or c.exit in exits)
        and (after is None or c.t >= after)
    ]
    what = " ".join(str(x) for x in (command or "traced commands", *sorted(subs)))
    if exits:
        what += f" exiting {sorted(exits)}"
    if after is not None:
        what += " after the last write"
    low, high = bounds(params)
    return Verdict(*count_in_bounds(len(calls), low, high, what))


class TraceCheck:
    """Invocations of the traced tool, counted against min/max."""

    name = "trace"

    def run(self, spec: CheckSpec, workspace: Path, ctx: CheckContext) -> Verdict:
        return evaluate(spec.params, run_view(ctx, self.name))
