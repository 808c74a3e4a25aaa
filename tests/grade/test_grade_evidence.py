"""The sections of grade.json read from what the agent left: events, trace and transcript checks,
multi-step usage, serve requests; a symlinked log is not evidence."""

from __future__ import annotations

import json
from pathlib import Path

from harness.grade import grade_run
from tests.grade.helpers import (
    COMPILES,
    T0,
    VALID_PY,
    call,
    check,
    demo_job,
    handler_project,
    make_run,
    scenario,
    write_jsonl,
)


def test_events_metrics_and_check(tmp_path: Path) -> None:
    project = handler_project(tmp_path)
    scen = scenario([COMPILES, check("recalled", "events", where={"type": "recall"}, min=2)])
    events = [{"type": "recall"}, {"type": "recall"}, {"type": "memory_write"}, {"type": "custom"}]
    g = grade_run(
        make_run(tmp_path / "a", demo_job(scen), workspace={"app/main.py": VALID_PY}, events=events),
        project=project,
    )
    assert g.metrics["recalls"] == 2 and g.metrics["memory_writes"] == 1 and g.metrics["mishaps"] == 0
    assert g.metrics["events.custom"] == 1 and {c.id: c.outcome for c in g.checks}["recalled"] == "pass"
    g2 = grade_run(
        make_run(tmp_path / "b", demo_job(scen), workspace={"app/main.py": VALID_PY}), project=project
    )
    assert "recalls" not in g2.metrics and {c.id: c.outcome for c in g2.checks}["recalled"] == "fail"


def test_trace_and_transcript_checks(tmp_path: Path) -> None:
    project = handler_project(tmp_path)
    checks = [
        check("checked-after", "trace", command="mytool", subcommand="check", after_last_write=True),
        check("said-done", "transcript", contains="done", role="assistant"),
    ]
    trace = [call(1, "mytool", "check"), call(9, "mytool", "check")]
    snaps = [(5, "app/main.py", VALID_PY)]
    job = demo_job(scenario(checks))
    good = make_run(
        tmp_path / "a",
        job,
        workspace={"app/main.py": VALID_PY},
        trace=trace,
        snapshots=snaps,
        transcript=[{"role": "assistant", "text": "All done."}],
    )
    g = grade_run(good, project=project)
    assert [c.outcome for c in g.checks] == ["pass", "pass"]
    early = make_run(
        tmp_path / "b", job, workspace={"app/main.py": VALID_PY}, trace=trace[:1], snapshots=snaps
    )
    g2 = grade_run(early, project=project)
    assert [c.outcome for c in g2.checks] == ["fail", "unavailable"] and not g2.passed


def test_multi_step_usage_and_transcript_span_every_session(tmp_path: Path) -> None:
    project = handler_project(tmp_path)
    exps = ({"id": "said-plan", "transcript": {"contains": "plan"}},)
    scen = scenario([COMPILES], expectations=exps)
    run = make_run(
        tmp_path / "run",
        demo_job(scen),
        workspace={"app/main.py": VALID_PY},
        usage=[{"t": 50, "input": 10, "output": 1}],
        transcript=[{"type": "message", "text": "done"}],
    )
    step = run / "steps" / "step-01"
    write_jsonl(
        step / "usage.jsonl",
        [{"t": T0 + 1, "input": 100, "output": 10}, {"t": T0 + 2, "input": 200, "output": 20}],
    )
    write_jsonl(step / "transcript.jsonl", [{"type": "message", "text": "my plan: add one"}])
    g = grade_run(run, project=project)
    assert (g.usage.turns, g.usage.input, g.usage.output) == (3, 310, 31)
    assert [(e.id, e.outcome) for e in g.expectations] == [("said-plan", "pass")]


def test_malformed_serve_requests(tmp_path: Path) -> None:
    project = handler_project(tmp_path)
    serve = [
        {
            "t": T0 + 1,
            "tool": "mytool",
            "session": "s1",
            "dir": "in",
            "line": '{"jsonrpc": "2.0", "id": 1, "method": "check"}',
        },
        {
            "t": T0 + 2,
            "tool": "mytool",
            "session": "s1",
            "dir": "out",
            "line": '{"jsonrpc": "2.0", "id": 1, "result": {}}',
        },
        {"t": T0 + 3, "tool": "mytool", "session": "s1", "dir": "in", "line": "check app/main.py please"},
        {
            "t": T0 + 4,
            "tool": "mytool",
            "session": "s1",
            "dir": "out",
            "line": '{"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "parse error"}}',
        },
        {"t": T0 + 5, "tool": "mytool", "session": "s1", "dir": "in", "line": '{"jsonrpc": "2.0", "id": 2}'},
        {
            "t": T0 + 6,
            "tool": "mytool",
            "session": "s1",
            "dir": "out",
            "line": '{"jsonrpc": "2.0", "id": 2, "error": {"code": -32600, "message": "invalid request"}}',
        },
        {**call(7, "mytool", "serve"), "session": "s1"},
        "not json at all",
    ]
    run = make_run(tmp_path / "run", demo_job(scenario([COMPILES])), workspace={"app/main.py": VALID_PY})
    (run / "trace.jsonl").write_text(
        "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in serve)
    )
    g = grade_run(run, project=project)
    assert g.friction.malformed_serve_requests == 2  # the non-JSON line in, the invalid request refused
    assert (g.tool_use.serve_sessions, g.tool_use.serve_requests, g.tool_use.malformed_rows) == (1, 3, 1)
    assert g.tool_use.by_subcommand["mytool serve"].invocations == 1


def test_symlinked_artifacts_are_not_evidence(tmp_path: Path) -> None:
    project = handler_project(tmp_path)
    forged = tmp_path / "forged-trace.jsonl"
    forged.write_text(json.dumps(call(1, "mytool", "check")) + "\n")
    run = make_run(
        tmp_path / "run",
        demo_job(scenario([COMPILES])),
        workspace={"app/main.py": VALID_PY},
        snapshots=[(1, "app/main.py", VALID_PY)],
    )
    (run / "trace.jsonl").symlink_to(forged)
    index = run / "snapshots" / "index.jsonl"
    index.write_text(
        json.dumps({"t": T0 + 1, "index": 1, "file": "app/main.py", "snapshot": "../../outside.py"}) + "\n"
    )
    g = grade_run(run, project=project)
    assert g.tool_use.invocations == 0 and g.tool_use.malformed_rows == 1
    assert g.snapshots.count == 1 and g.snapshots.verdicts[0].valid is False  # read as deleted, not followed
