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


def _unpriced(model: str) -> dict[str, object]:
    usage = Usage(
        present=True, turns=1, input=10, output=5, total=15, price_table=f"v1: model {model} is not priced"
    )
    return {"usage": usage}


def test_a_run_with_usage_but_no_price_takes_the_usd_off_its_condition(tmp_path: Path) -> None:
    """An agent that names an unpriced model in its usage must not leave the cost mean on its cheap runs."""
    add_run(tmp_path, scenario="s", cell=CONTROL, trial=1)
    add_run(tmp_path, scenario="s", cell=BIN, trial=1, cost=0.02)
    add_run(tmp_path, scenario="s", cell=BIN, trial=2, cost=None, sections=_unpriced("pricey"))
    for _ in range(2):  # the walk, then the index's cached facts
        summary = build_summary(tmp_path)
        (treated,) = [g for g in summary.groups if g.by == "condition" and g.condition == BIN]
        (control,) = [g for g in summary.groups if g.by == "condition" and g.condition == CONTROL]
        assert (treated.cost.cost_per_run, treated.cost.cost_per_usable, treated.cost.unpriced_runs) == (
            None,
            None,
            1,
        )
        assert treated.cost.tokens_per_run is not None  # the tokens are still counted
        assert (control.cost.cost_per_run, control.cost.unpriced_runs) == (0.01, 0)
        assert [d.message for d in summary.diagnostics if d.kind == "unpriced"] == [
            "scripted bin/none/off: 1/2 run(s) reported usage that could not be priced "
            "(v1: model pricey is not priced (1)): no USD is given for it"
        ]


def test_unpriced_reasons_are_kept_few_whatever_models_the_agent_names(tmp_path: Path) -> None:
    for t in range(1, 9):
        add_run(tmp_path, scenario="s", cell=BIN, trial=t, cost=None, sections=_unpriced(f"m{t}"))
    (message,) = _diagnostics(tmp_path, "unpriced")
    assert message.startswith("scripted bin/none/off: 8/8 run(s)")
    assert "other reasons (3)" in message and message.count("is not priced") == 5


def test_passing_runs_that_edited_outside_writable_are_a_warning(tmp_path: Path) -> None:
    outside = {"unsafe_edits": ("tests/conftest.py",), "unsafe_edits_count": 1}
    add_run(tmp_path, scenario="s", cell=BIN, trial=1, run_fields=outside)
    add_run(tmp_path, scenario="s", cell=BIN, trial=2, passed=False, run_fields=outside)
    add_run(tmp_path, scenario="s", cell=BIN, trial=3)
    add_run(tmp_path, scenario="s", cell=CONTROL, trial=1, passed=False, run_fields=outside)
    for _ in range(2):
        found = [d for d in build_summary(tmp_path).diagnostics if d.kind == "unsafe-edits"]
        assert [(d.severity, d.message.split(";")[0]) for d in found] == [
            (
                "warning",
                "scripted bin/none/off: 1 passing run(s) changed files outside their scenario's `writable`",
            )
        ]
        assert [e.split("/")[-1] for e in found[0].evidence] == ["trial-01"]
