"""`events`: a JSONL event log a treatment writes into its state directory, filtered and counted.

Parameters: `file` (state-relative, default `events.jsonl`), `where` (field -> value; a
list value matches any of its items), `min` (default 1), `max`. A treatment that wrote
no log counts zero events.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from compiler.contract import CheckSpec
from harness.artifacts.names import EVENTS_FILE
from harness.checks._run import bounds, count_in_bounds, run_view
from harness.checks.base import CheckContext, Verdict, as_list

if TYPE_CHECKING:
    from harness.artifacts.run_view import RunView


def matches(event: Mapping[str, Any], where: Mapping[str, Any]) -> bool:
    """True when every `where` field equals (or is one of) the event's value."""
    for key, wanted in where.items():
        options = as_list(wanted) if isinstance(wanted, list) else [wanted]
        if event.get(key) not in options:
            return False
    return True


def evaluate(params: Mapping[str, Any], view: RunView) -> Verdict:
    """The events predicate on one run."""
    name = str(params.get("file", EVENTS_FILE))
    events = view.events(name) or ()
    where: Mapping[str, Any] = params.get("where") or {}
    n = sum(1 for e in events if matches(e, where))
    shown = ", ".join(f"{k}={v}" for k, v in sorted(where.items())) or "all"
    low, high = bounds(params)
    ok, message = count_in_bounds(n, low, high, f"events in {name} ({shown})")
    return Verdict(ok, message if view.events(name) is not None else message + " (no event log)")


class EventsCheck:
    """Events of a treatment's log, counted against min/max."""

    name = "events"

    def run(self, spec: CheckSpec, workspace: Path, ctx: CheckContext) -> Verdict:
        return evaluate(spec.params, run_view(ctx, self.name))
