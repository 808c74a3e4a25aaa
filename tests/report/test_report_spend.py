"""Spend and stopping in the report: budget stops counted per condition, a matrix's rounds.json (what
was decided, what was not run and why, what it saved) on every page, and trials the rounds chose not
to run counted apart from missing ones."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from compiler.contract import iter_jobs
from harness.artifacts.records import read_run
from harness.artifacts.rounds import RoundsRecord, Skipped, Spend, Verdict, write_rounds
from harness.artifacts.store import write_record
from harness.report.build import build_summary
from harness.report.completeness import completeness
from harness.report.render_html import render_html
from harness.report.render_md import render_markdown
from harness.report.terminal import render_terminal
from tests.helpers import assay, compiled_copy
from tests.report.report_tree import CONTROL, add_run

TREATMENT = "bin/none/off"


def _stopped(run_dir: Path, limit: str) -> None:
    record = read_run(run_dir)
    write_record(run_dir / "run.json", record.model_copy(update={"limits_hit": (limit,), "exit_code": None}))


def test_budget_stops_are_counted_per_condition(tmp_path: Path) -> None:
    for t in (1, 2, 3):
        add_run(tmp_path, scenario="s", cell=CONTROL, trial=t, passed=False)
        stopped = add_run(tmp_path, scenario="s", cell=TREATMENT, trial=t, passed=t == 1)
        if t > 1:
            _stopped(stopped, "total_tokens")
    _stopped(tmp_path / "s" / "scripted" / "none" / "none" / "off" / "trial-01", "timeout")  # not a budget
    summary = build_summary(tmp_path)
    rows = {g.condition: g for g in summary.groups if g.by == "condition"}
    assert rows[TREATMENT].counts.budget_stops == 2 and rows[CONTROL].counts.budget_stops == 0
    assert rows[TREATMENT].counts.graded == 3  # graded on the work they left: in the rate
    md = render_markdown(summary)
    assert "| budget stops |" in md and "runs a per-trial budget" in md
    assert "<th>budget stops</th>" in render_html(summary)
    assert f"budget stops (graded on what they left): scripted {TREATMENT} 2" in render_terminal(summary)
    plain = build_summary(tmp_path / "s" / "scripted" / "none")  # no budget stop in the control alone
    assert "budget stops" not in render_markdown(plain)


def _verdict(scenario: str | None, status: str, **extra: object) -> Verdict:
    fields: dict[str, object] = {
        "version": None,
        "agent": "scripted",
        "condition": TREATMENT,
        "control": CONTROL,
        "scenario": scenario,
        "status": status,
        "round": 7 if status != "open" else None,
        "pairs": 7,
        "value": 1.0,
        "low": -1.0,
        "high": 1.0,
    }
    return Verdict.model_validate({**fields, **extra})


def test_a_matrix_run_in_rounds_is_reported(tmp_path: Path) -> None:
    for t in (1, 2):
        add_run(tmp_path, scenario="s", cell=CONTROL, trial=t, passed=False)
        add_run(tmp_path, scenario="s", cell=TREATMENT, trial=t, passed=True)
    record = RoundsRecord(
        matrix="m",
        until="decided",
        method="group-sequential ...",
        alpha=0.05,
        min_uplift=0.0,
        scenario_threshold=20.0,
        rounds_planned=10,
        rounds_run=7,
        planned=20,
        ran=14,
        verdicts=[
            _verdict("s", "effect", e_value=26.8),
            _verdict(None, "open", low=-0.2, high=0.9, level=0.004, p=0.02),
        ],
        skipped=[Skipped(job=f"m/{TREATMENT}/scripted/s/t{t:02d}", why="decided") for t in (8, 9, 10)],
        spend=Spend(tokens=14_000.0, cost_usd=0.14, saved_tokens=3_000.0, saved_cost_usd=0.03),
        finished=True,
    )
    write_rounds(tmp_path, record)
    summary = build_summary(tmp_path)
    assert summary.rounds == [record]
    md = render_markdown(summary)
    assert "## Until decided: m" in md and "7 of 10 planned rounds ran" in md
    assert "| scripted | bin/none/off | s | uplift | 7 | +1.00 | e = 27 (needs 20) | 7 |" in md
    assert "| scripted | bin/none/off | all scenarios | open |" in md
    assert "14 of 20 planned trials ran" in md and "3 because its comparisons were decided" in md
    assert "saved about 3,000 tokens ($0.0300), 18% of the full plan's estimated 17,000 tokens" in md
    assert "| scripted | bin/none/off | s | its comparisons were decided | 3 |" in md
    assert "Until decided: m</h2>" in render_html(summary)
    terminal = render_terminal(summary)
    assert "decided at round 7: scripted bin/none/off on s: uplift +1.00" in terminal
    assert "not run: 3 (decided); saved about 3,000 tokens" in terminal
    assert json.loads(summary.model_dump_json())["rounds"][0]["spend"]["saved_tokens"] == 3000.0


def test_trials_the_rounds_skipped_are_not_missing(tmp_path: Path) -> None:
    project = compiled_copy(tmp_path / "compiled")
    runs = tmp_path / "runs"
    ran = assay("--project", project, "matrix", "smoke", "--cell", CONTROL, "--runs", runs)
    assert ran.returncode == 0, ran.stderr
    bin_jobs = [j for j in iter_jobs(project / "generated", matrix="smoke") if j.cell.name == TREATMENT]
    write_rounds(
        runs / "smoke",
        RoundsRecord(
            matrix="smoke",
            until="planned",
            method=None,
            alpha=0.05,
            min_uplift=0.0,
            rounds_planned=1,
            rounds_run=1,
            planned=2,
            ran=1,
            skipped=[Skipped(job=j.id, why="budget") for j in bin_jobs],
            spend=Spend(tokens=1.0, cost_usd=None, saved_tokens=None, saved_cost_usd=None),
            finished=True,
        ),
    )
    summary = build_summary(runs / "smoke", project=project)
    assert summary.completeness is not None
    cell = next(c for c in summary.completeness.cells if c.cell == TREATMENT)
    assert cell.skipped == [j.id for j in bin_jobs] and cell.not_run == []
    assert not any(d.kind.startswith("incomplete") for d in summary.diagnostics)


def test_planned_vs_done_through_the_index_is_what_the_records_say(tmp_path: Path) -> None:
    """The report reads which planned trials finished from the results index (never every run.json
    and grade.json of the matrix); the answer is the one the records on disk give."""
    project = compiled_copy(tmp_path / "compiled")
    runs = tmp_path / "runs"
    ran = assay("--project", project, "matrix", "smoke", "--runs", runs)
    assert ran.returncode == 0, ran.stderr
    done = sorted(p.parent for p in (runs / "smoke").rglob("run.json"))
    assert len(done) == 2
    shutil.rmtree(done[0])
    done[0].mkdir()  # its folder made again, empty: unfinished
    record = read_run(done[1])
    write_record(done[1] / "run.json", record.model_copy(update={"interrupted": True}))
    summary = build_summary(runs / "smoke", project=project)
    assert summary.completeness is not None
    assert summary.completeness == completeness(runs / "smoke", project)  # every record read from disk
    assert summary.completeness.done == 0 and summary.completeness.planned == 2
    assert sum(len(c.unfinished) for c in summary.completeness.cells) == 2
    # On the page: in the evidence, and per cell beside the diagnostics.
    md, page = render_markdown(summary), render_html(summary)
    assert "Planned vs done: 0 of 2 planned trials done." in md
    assert md.index("## Diagnostics") < md.index("### Planned vs done") < md.index("## Conditions")
    assert "| smoke | `none/none/off` | 1 | 0 | 0 | 1 | 0 |" in md
    assert page.index('id="diagnostics"') < page.index('id="planned"') < page.index('id="conditions"')
    assert "; planned vs done: 0/2" in render_terminal(summary)
