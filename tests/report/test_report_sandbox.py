"""The report counts what the sandbox did: limits hit, protections that did not hold."""

from __future__ import annotations

from pathlib import Path

from report_tree import CONTROL, add_run

from harness.artifacts.sandbox_sections import Protections
from harness.report import build_summary

WEAK = Protections(
    isolation="none",
    failed=("the sandbox runs as host root (uid 0): files it writes are root's on the host",),
)


def test_limit_hits_and_unprotected_runs_are_diagnostics_with_their_runs(tmp_path: Path) -> None:
    add_run(tmp_path, scenario="s", cell=CONTROL, trial=1, run_fields={"limits_hit": ("pids",)})
    add_run(tmp_path, scenario="s", cell=CONTROL, trial=2, run_fields={"limits_hit": ("pids", "workspace")})
    add_run(tmp_path, scenario="s", cell="bin/none/off", trial=1, run_fields={"protections": WEAK})
    add_run(tmp_path, scenario="s", cell="bin/none/off", trial=2)
    by_message = {d.message: d for d in build_summary(tmp_path).diagnostics if d.kind in ("limit", "sandbox")}
    pids = by_message["2 run(s) hit the pids limit (see limits_hit in run.json; graded on what they left)"]
    assert pids.severity == "warning" and len(pids.evidence) == 2
    assert (
        "1 run(s) hit the workspace limit (see limits_hit in run.json; graded on what they left)"
        in by_message
    )
    root = by_message[f"1 run(s) ran without a sandbox protection: {WEAK.failed[0]}"]
    assert root.severity == "error" and root.evidence == ["s/scripted/bin/none/off/trial-01"]
    assert len(by_message) == 3
