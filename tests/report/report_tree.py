"""Build real run trees on disk (run.json / grade.json / job.json through the contract models), and
the tree of the summary tests (`build_tree`), whose answers they compute by hand."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.artifacts.grade_sections import (
    Disagreement,
    ExpectationOutcome,
    Friction,
    NotableExit,
    SubcommandUse,
    ToolUse,
)
from harness.artifacts.records import CheckOutcome, Grade, RunnerMetrics, RunRecord, RunStatus
from harness.artifacts.store import write_atomic, write_record

CONTROL = "none/none/off"


def a_grade(status: RunStatus, **fields: Any) -> Grade:
    """A grade with the fields every grade holds filled in (nothing passed, no checks) unless given."""
    held: dict[str, Any] = {
        "passed": False,
        "usable": False,
        "checks": (),
        "grader_hash": "",
        "graded_at": 0.0,
    }
    return Grade(status=status, **{**held, **fields})


def levels_of(cell: str) -> dict[str, str]:
    tool, knowledge, network = cell.split("/")
    return {"tool": tool, "knowledge": knowledge, "network": network}


def add_run(
    root: Path,
    *,
    scenario: str,
    cell: str,
    trial: int,
    agent: str = "scripted",
    passed: bool | None = True,
    usable: bool | None = None,
    version: str | None = None,
    status: RunStatus = RunStatus.GRADED,
    invalid: str | None = None,
    error: str | None = None,
    exit_code: int | None = 0,
    infra_retries: int = 0,
    tokens: tuple[int, int] | None = (1000, 200),
    cost: float | None = 0.01,
    peak_context: int | None = 5000,
    checks: list[tuple[str, str, str]] | None = None,
    family: str | None = None,
    split: str | None = None,
    details: dict[str, Any] | None = None,
    sections: dict[str, Any] | None = None,
    control: bool | None = None,
    grade: bool = True,
    sanity: str | None = None,
    run_fields: dict[str, Any] | None = None,
) -> Path:
    """One run directory with a run.json and (unless grade=False) a grade.json.

    `sections` are typed Grade fields (tool_use, friction, expectations, disagreement, usage...);
    `run_fields` more RunRecord fields (limits_hit, protections...).
    """
    parts = [version] if version else []
    run_dir = root.joinpath(*parts, scenario, agent, *cell.split("/"), f"trial-{trial:02d}")
    run_dir.mkdir(parents=True)
    metrics = RunnerMetrics(
        turns=3,
        input_tokens=tokens[0] if tokens else None,
        output_tokens=tokens[1] if tokens else None,
        cost_usd=cost,
        peak_context=peak_context,
        duration_s=1.5,
    )
    run = RunRecord(
        job_id=f"m/{cell}/{agent}/{scenario}/t{trial:02d}",
        job_hash="h" * 8,
        matrix="m",
        scenario=scenario,
        cell=cell,
        levels=levels_of(cell),
        control=(cell == CONTROL) if control is None else control,
        agent=agent,
        sanity=sanity,
        trial=trial,
        version=version,
        exit_code=exit_code,
        started_at=0.0,
        ended_at=1.5,
        infra_retries=infra_retries,
        invalid=invalid,
        error=error,
        metrics=metrics,
        **(run_fields or {}),
    )
    write_record(run_dir / "run.json", run)
    (run_dir / "diff.patch").write_text("", encoding="utf-8")
    (run_dir / "agent.log").write_text("log\n", encoding="utf-8")
    if family or split:
        job = {"schema_version": 1, "scenario": {"id": scenario, "family": family or "f", "split": split}}
        write_atomic(run_dir / "job.json", json.dumps(job))
    if grade:
        ok = bool(passed)
        outcomes = tuple(
            CheckOutcome(id=cid, kind="command", layer=layer, outcome=outcome)  # type: ignore[arg-type]
            for cid, layer, outcome in (
                checks if checks is not None else [("works", "agent", "pass" if ok else "fail")]
            )
        )
        g = Grade(
            status=status,
            passed=ok and status is RunStatus.GRADED,
            usable=(ok if usable is None else usable) and status is RunStatus.GRADED,
            error=error if status is not RunStatus.GRADED else None,
            invalid=invalid,
            checks=outcomes,
            failed_layers=tuple(sorted({c.layer for c in outcomes if c.outcome == "fail"})),
            details=details or {},
            **{"grader_hash": "", "graded_at": 0.0, **(sections or {})},
        )
        write_record(run_dir / "grade.json", g)
    return run_dir


BIN = "bin/none/off"
SKILL = "bin+skill/wiki/on"
# Pass (1) / fail (0) per trial 1..4.
CONTROL_PASS = {"s1": [1, 0, 0, 0], "s2": [1, 1, 0, 0], "s3": [0, 0, 0, 0]}
BIN_PASS = {"s1": [1, 1, 1, 0], "s2": [1, 1, 1, 1], "s3": [0, 1, 0, 0]}


def build_tree(root: Path) -> None:
    """The summary tests' tree: scenarios s1-s3 x control, BIN and SKILL x trials 1-4 (passes as
    CONTROL_PASS and BIN_PASS say), plus a failed-to-run, an invalid, an ungradeable and a retried run."""
    for scenario in ("s1", "s2", "s3"):
        split = "test" if scenario == "s3" else "train"
        for trial in range(1, 5):
            ctrl = bool(CONTROL_PASS[scenario][trial - 1])
            add_run(
                root,
                scenario=scenario,
                cell=CONTROL,
                trial=trial,
                passed=ctrl,
                family="lint",
                split=split,
                usable=False if (scenario, trial) == ("s2", 1) else None,
                checks=[("works", "agent", "pass" if ctrl else "fail"), ("keeps-api", "agent", "pass")],
            )
            ok = bool(BIN_PASS[scenario][trial - 1])
            checks = [("works", "agent", "pass" if ok else "fail"), ("keeps-api", "agent", "pass")]
            if (scenario, trial) == ("s3", 1):
                checks.append(("engine-ok", "engine", "fail"))
            notable = (
                (NotableExit(index=1, argv=("mytool", "check"), exit=3),)
                if (scenario, trial) == ("s1", 2)
                else ()
            )
            sections: dict[str, Any] = {
                "tool_use": ToolUse(
                    present=True,
                    invocations=3,
                    by_subcommand={
                        "mytool check": SubcommandUse(invocations=2, output_bytes=400, est_output_tokens=100),
                        "mytool lint": SubcommandUse(invocations=1),
                    },
                    notable_exits=notable,
                ),
                "friction": Friction(usage_errors=1 if trial == 1 else 0, help_lookups=2),
                "expectations": (
                    ExpectationOutcome(id="E01", outcome="pass" if ok else "fail"),
                    ExpectationOutcome(id="E05", outcome="unavailable"),
                ),
            }
            if (scenario, trial) == ("s2", 3):
                sections["disagreement"] = (
                    Disagreement(
                        accepts="mytool", rejects="oracle", direction="mytool accepts, oracle rejects"
                    ),
                )
            add_run(
                root,
                scenario=scenario,
                cell=BIN,
                trial=trial,
                passed=ok,
                family="lint",
                split=split,
                tokens=(2000, 300),
                checks=checks,
                sections=sections,
            )
            add_run(root, scenario=scenario, cell=SKILL, trial=trial, passed=True, family="lint", split=split)
    add_run(
        root,
        scenario="s1",
        cell=BIN,
        trial=5,
        status=RunStatus.FAILED_TO_RUN,
        passed=False,
        error="adapter crashed",
        exit_code=1,
    )
    add_run(
        root, scenario="s1", cell=BIN, trial=6, passed=False, invalid="canary: mytool reachable under none"
    )
    add_run(
        root,
        scenario="s2",
        cell=BIN,
        trial=5,
        status=RunStatus.UNGRADEABLE,
        passed=False,
        error="workspace missing",
    )
    add_run(root, scenario="s2", cell=BIN, trial=7, passed=True, infra_retries=2)
