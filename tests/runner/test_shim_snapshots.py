"""The tracing shim and the snapshots, with real processes."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from harness.trial import run_trial, shim
from tests.helpers import command_agent, make_job


def test_shim_records_invocations_and_tees_serve_sessions(tmp_path: Path) -> None:
    tools = tmp_path / "tools"
    tools.mkdir()
    tool = tools / "mytool"
    tool.write_text(
        '#!/bin/sh\nif [ "$1" = serve ]; then while read l; do echo "got $l"; done; exit 0; fi\n'
        "echo out; echo err >&2; exit 3\n"
    )
    tool.chmod(0o755)
    trace = tmp_path / "trace.jsonl"
    found = shim.install(
        tmp_path / "bin",
        path_dirs=[tools],
        trace_names=["cat"],
        serve=["serve"],
        trace_file=trace,
        search_path="/usr/bin:/bin",
    )
    assert set(found) == {"mytool", "cat"}
    plain = subprocess.run([tmp_path / "bin" / "mytool", "check", "x y"], capture_output=True, check=False)
    assert (plain.returncode, plain.stdout, plain.stderr) == (3, b"out\n", b"err\n")
    served = subprocess.run(
        [tmp_path / "bin" / "mytool", "serve"], input=b"a\nb\n", capture_output=True, check=False
    )
    assert served.stdout == b"got a\ngot b\n"
    rows = [json.loads(line) for line in trace.read_text().splitlines()]
    calls = [r for r in rows if "argv" in r]
    assert calls[0]["argv"] == ["mytool", "check", "x y"]
    assert (calls[0]["exit"], calls[0]["stdout_bytes"], calls[0]["stderr_bytes"]) == (3, 4, 4)
    lines = [(r["dir"], r["line"]) for r in rows if "dir" in r]
    assert sorted(lines) == [("in", "a"), ("in", "b"), ("out", "got a"), ("out", "got b")]
    assert calls[1]["argv"] == ["mytool", "serve"] and calls[1]["session"] == rows[-2]["session"]


def test_each_write_of_the_entry_is_snapshotted_with_its_time(project: Path, tmp_path: Path) -> None:
    agent = command_agent(
        "for i in 1 2 3; do echo v$i > app/main.py; sleep 0.6; done; rm app/main.py; sleep 0.6"
    )
    record = run_trial(make_job(agent=agent), project=project, run_dir=tmp_path / "run")
    assert record.error is None
    snaps = tmp_path / "run" / "snapshots"
    index = [json.loads(line) for line in (snaps / "index.jsonl").read_text().splitlines()]
    assert [r.get("deleted", False) for r in index] == [False, False, False, True]
    assert [(snaps / r["snapshot"]).read_text() for r in index[:3]] == ["v1\n", "v2\n", "v3\n"]
    times = [r["t"] for r in index]
    assert times == sorted(times) and record.started_at <= times[0] <= record.ended_at
