"""`snapshot`: the validity of the entry over time, from the snapshots taken after each write.

Parameters: `authority` (a named authority whose checks decide each snapshot) or `run` (a
shell command, exit 0 = valid; default: the scenario's first authority), `final_valid`
(default true: the last snapshot must be valid), `max_regressions` (valid-to-invalid
transitions allowed), `first_valid_within` (the first valid snapshot's index must be at
most this). A run with no snapshot fails: the agent never wrote the entry.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from compiler.contract import CheckSpec
from harness.checks._run import run_view
from harness.checks.base import CheckContext, CheckError, Verdict

if TYPE_CHECKING:
    from harness.artifacts.run_view import RunView


def evaluate(params: Mapping[str, Any], view: RunView, workspace: Path, ctx: CheckContext) -> Verdict:
    """The snapshot predicate on one run."""
    from harness.checks import snapshot_validity

    label, deciders = snapshot_validity.validity_checks(view, params)
    if not deciders:
        raise CheckError("no authority to decide snapshots by: give `authority` or `run`")
    if not view.snapshots:
        return Verdict(False, "no snapshot: the agent never wrote a watched file")
    verdicts = snapshot_validity.validity(view, label, deciders, workspace, ctx)
    first, regressions = snapshot_validity.summarise(verdicts)
    problems: list[str] = []
    if params.get("final_valid", True) and verdicts[-1].valid is not True:
        problems.append(f"last snapshot #{verdicts[-1].index} is not valid: {verdicts[-1].message}")
    if params.get("max_regressions") is not None and len(regressions) > int(params["max_regressions"]):
        problems.append(f"{len(regressions)} valid-to-invalid regression(s) at {list(regressions)}")
    within = params.get("first_valid_within")
    if within is not None and (first is None or first > int(within)):
        problems.append(f"first valid snapshot is {first}, expected at most {within}")
    summary = f"{len(verdicts)} snapshot(s) by {label}, first valid {first}, regressions {list(regressions)}"
    return Verdict(not problems, "; ".join(problems) or summary)


class SnapshotCheck:
    """The entry's validity across the snapshots of the run."""

    name = "snapshot"

    def run(self, spec: CheckSpec, workspace: Path, ctx: CheckContext) -> Verdict:
        return evaluate(spec.params, run_view(ctx, self.name), workspace, ctx)
