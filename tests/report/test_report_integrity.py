"""Runs that left the denominator are shown per agent and condition, and an uneven loss is a warning."""

from __future__ import annotations

from pathlib import Path

from report_tree import CONTROL, add_run

from harness.artifacts.grade_sections import Usage
from harness.artifacts.records import RunStatus
from harness.report import build_summary

BIN = "bin/none/off"


def _diagnostics(tmp_path: Path, kind: str) -> list[str]:
    return [d.message for d in build_summary(tmp_path).diagnostics if d.kind == kind]


def test_exclusions_are_listed_per_agent_and_condition_with_reasons(tmp_path: Path) -> None:
    for t in (1, 2, 3, 4):
        add_run(tmp_path, scenario="s", cell=CONTROL, trial=t)
    add_run(tmp_path, scenario="s", cell=BIN, trial=1)
    add_run(tmp_path, scenario="s", cell=BIN, trial=2, status=RunStatus.FAILED_TO_RUN, error="disk full")
    add_run(tmp_path, scenario="s", cell=BIN, trial=3, status=RunStatus.FAILED_TO_RUN, error="disk full")
    add_run(tmp_path, scenario="s", cell=BIN, trial=4, invalid="canary failed: mytool reachable")
    assert _diagnostics(tmp_path, "excluded") == [
        "scripted bin/none/off: 3/4 runs excluded from its rates: "
        "failed_to_run: disk full (2); invalid: canary failed: mytool reachable (1)"
    ]
    assert _diagnostics(tmp_path, "exclusions-differ") == [
        "scripted bin/none/off lost 3/4 runs to exclusions, its control none/none/off 0/4: "
        "the rates compare different denominators"
    ]


def test_an_even_loss_is_listed_but_not_a_warning(tmp_path: Path) -> None:
    for cell in (CONTROL, BIN):
        add_run(tmp_path, scenario="s", cell=cell, trial=1)
        add_run(tmp_path, scenario="s", cell=cell, trial=2, status=RunStatus.FAILED_TO_RUN, error="oom")
    assert len(_diagnostics(tmp_path, "excluded")) == 2
    assert _diagnostics(tmp_path, "exclusions-differ") == []


def test_usage_the_gateway_contradicts_is_reported(tmp_path: Path) -> None:
    usage = Usage(present=True, source="gateway", turns=1, input=10, adapter_differs=("input_tokens",))
    add_run(tmp_path, scenario="s", cell=BIN, trial=1, sections={"usage": usage})
    add_run(tmp_path, scenario="s", cell=BIN, trial=2)
    (message,) = _diagnostics(tmp_path, "usage-disagrees")
    assert message.startswith(
        "scripted: in 1 run(s) the adapter's usage.jsonl differs from the model gateway"
    )
    assert _diagnostics(tmp_path, "usage-disagrees") == [message]  # again, from the index's cached facts
