"""Runs that left the denominator are shown per agent and condition, and an uneven loss is a warning."""

from __future__ import annotations

from pathlib import Path

from report_tree import CONTROL, add_run

from harness.artifacts.grade_sections import ContextLoad, Usage
from harness.artifacts.records import AgentEnd, RunStatus
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


def _end(cause: str, detail: str) -> dict[str, object]:
    return {"agent_end": AgentEnd.model_validate({"cause": cause, "detail": detail})}


def test_runs_the_agent_ended_stay_in_the_rates_and_are_counted_per_condition(tmp_path: Path) -> None:
    add_run(tmp_path, scenario="s", cell=CONTROL, trial=1)
    add_run(tmp_path, scenario="s", cell=CONTROL, trial=2)
    timed = _end("timeout", "the agent timed out after 2 s")
    add_run(tmp_path, scenario="s", cell=BIN, trial=1, passed=False, exit_code=None, run_fields=timed)
    claim = _end("claimed_infra", "the adapter exited 75 ..., but no model gateway carried the model")
    add_run(tmp_path, scenario="s", cell=BIN, trial=2, passed=False, exit_code=75, run_fields=claim)
    summary = build_summary(tmp_path)
    assert _diagnostics(tmp_path, "excluded") == [] and _diagnostics(tmp_path, "exclusions-differ") == []
    assert _diagnostics(tmp_path, "agent-ended") == [
        "scripted bin/none/off: 2/2 runs ended by the agent's own doing, graded on what they left (in its "
        "rates): exited 75 (provider failure) with none seen by the harness (1); timed out (1)"
    ]
    (claimed,) = _diagnostics(tmp_path, "claimed-infra")
    assert claimed.startswith("1 run(s) exited 75 (provider or infrastructure failure) after their retries")
    assert _diagnostics(tmp_path, "infra") == []  # a claim is not an infrastructure failure
    (treated,) = [g for g in summary.groups if g.by == "condition" and g.condition == BIN]
    assert (treated.counts.graded, treated.passed.k, treated.passed.n) == (2, 0, 2)
    reasons = {r.dir.split("/")[-1]: r.reason for r in summary.runs if r.condition == BIN}
    assert reasons["trial-01"] == "failed: works; the agent timed out after 2 s"


def test_unexpected_context_is_shown_never_excluded(tmp_path: Path) -> None:
    context = ContextLoad(
        present=True, loaded=("/root/.claude/CLAUDE.md",), unexpected=("/root/.claude/CLAUDE.md",)
    )
    add_run(tmp_path, scenario="s", cell=BIN, trial=1, sections={"context": context})
    add_run(
        tmp_path,
        scenario="s",
        cell=BIN,
        trial=2,
        sections={"context": ContextLoad(present=True, error="bad")},
    )
    add_run(tmp_path, scenario="s", cell=BIN, trial=3)
    (message,) = _diagnostics(tmp_path, "context-advisory")
    assert message.startswith(
        "2 run(s) reported unexpected or unreadable loaded context (context.json): advisory"
    )
    assert _diagnostics(tmp_path, "excluded") == [] and _diagnostics(tmp_path, "invalid") == []
    assert _diagnostics(tmp_path, "context-advisory") == [message]  # again, from the index's cached facts
