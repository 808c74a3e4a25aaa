"""Wall-clock of concurrent and serial runs is never compared silently (run.json `concurrent`)."""

from __future__ import annotations

import json
from pathlib import Path

from report_tree import CONTROL, add_run

from harness.artifacts.records import read_run
from harness.artifacts.store import write_record
from harness.report import build_summary

BIN = "bin/none/off"


def _concurrent(run_dir: Path) -> None:
    write_record(run_dir / "run.json", read_run(run_dir).model_copy(update={"concurrent": True}))


def _wallclock(tmp_path: Path) -> list[str]:
    return [d.message for d in build_summary(tmp_path).diagnostics if d.kind == "wall-clock"]


def test_one_mode_says_nothing(tmp_path: Path) -> None:
    for t in (1, 2):
        _concurrent(add_run(tmp_path, scenario="s", cell=CONTROL, trial=t))
        _concurrent(add_run(tmp_path, scenario="s", cell=BIN, trial=t))
    assert _wallclock(tmp_path) == []


def test_mixed_modes_are_flagged_with_evidence(tmp_path: Path) -> None:
    _concurrent(add_run(tmp_path, scenario="s", cell=CONTROL, trial=1))
    add_run(tmp_path, scenario="s", cell=BIN, trial=1)
    summary = build_summary(tmp_path)
    (diag,) = [d for d in summary.diagnostics if d.kind == "wall-clock"]
    assert diag.message.startswith("1 run(s) executed concurrently with sibling trials and 1 serially")
    assert any(e.startswith("concurrent: ") and "none/none/off" in e for e in diag.evidence)
    assert any(e.startswith("serial: ") and "bin/none/off" in e for e in diag.evidence)


def test_a_version_comparison_across_modes_refuses_duration_deltas(tmp_path: Path) -> None:
    for t in (1, 2):
        for cell in (CONTROL, BIN):
            add_run(tmp_path, scenario="s", cell=cell, trial=t, version="old")
            _concurrent(add_run(tmp_path, scenario="s", cell=cell, trial=t, version="new"))
    (tmp_path / "versions.json").write_text(
        json.dumps({"schema_version": 1, "baseline": "old", "candidate": "new"})
    )
    messages = _wallclock(tmp_path)
    assert len(messages) == 2
    assert messages[1] == (
        "version comparison: old ran serially and new concurrently; "
        "a duration difference between them is contention, not the tool: not compared"
    )
