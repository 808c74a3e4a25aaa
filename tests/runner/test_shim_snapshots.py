"""The tracing shim and the snapshots, with real processes."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from harness.trial import run_trial, shim
from tests.helpers import bin_cell, command_agent, make_job


def _tool_project(project: Path) -> None:
    tool = project / "tools" / "bin" / "mytool"
    tool.write_text(
        '#!/bin/sh\nif [ "$1" = serve ]; then while read l; do echo "got $l"; done; exit 0; fi\n'
        "echo out; echo err >&2; exit 3\n"
    )
    tool.chmod(0o755)


def test_each_invocation_is_a_row_the_tool_runner_sends(project: Path, tmp_path: Path) -> None:
    """The shim hands the call to the runner: output and exit reach the agent unchanged, the row
    (argv, exit, byte counts, serve lines) reaches trace.jsonl through the collector."""
    _tool_project(project)
    agent = command_agent(
        "mytool check 'x y' > app/out.txt 2> app/err.txt; echo $? > app/code.txt; "
        "printf 'a\\nb\\n' | mytool serve > app/served.txt"
    )
    record = run_trial(make_job(agent=agent, cell=bin_cell()), project=project, run_dir=tmp_path / "run")
    assert record.error is None, record.traceback
    ws = tmp_path / "run" / "workspace" / "app"
    assert [(ws / f).read_text() for f in ("out.txt", "err.txt", "code.txt")] == ["out\n", "err\n", "3\n"]
    assert (ws / "served.txt").read_text() == "got a\ngot b\n"
    rows = [json.loads(line) for line in (tmp_path / "run" / "trace.jsonl").read_text().splitlines()]
    calls = [r for r in rows if "argv" in r]
    assert calls[0]["argv"] == ["mytool", "check", "x y"]
    assert (calls[0]["exit"], calls[0]["stdout_bytes"], calls[0]["stderr_bytes"]) == (3, 4, 4)
    assert calls[0]["stderr"] == "err\n"
    lines = [(r["dir"], r["line"]) for r in rows if "dir" in r]
    assert sorted(lines) == [("in", "a"), ("in", "b"), ("out", "got a"), ("out", "got b")]
    assert calls[1]["argv"] == ["mytool", "serve"] and calls[1]["session"] == rows[-2]["session"]
    assert record.trace_channel is not None and record.trace_channel.refused == 0
    assert record.trace_channel.rows == len(rows)


def test_a_shim_outside_a_trial_runs_the_tool_untraced(tmp_path: Path) -> None:
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "mytool").write_text("#!/bin/sh\necho real; exit 4\n")
    (tools / "mytool").chmod(0o755)
    found = shim.install(tmp_path / "bin", path_dirs=[tools], trace_names=[], serve=[], search_path="")
    assert set(found) == {"mytool"}
    done = subprocess.run([tmp_path / "bin" / "mytool"], capture_output=True, check=False, env={})
    assert (done.returncode, done.stdout) == (4, b"real\n")
    assert json.loads((tmp_path / "tools.json").read_text()) == {
        "mytool": {"real": str(tools / "mytool"), "serve": []}
    }


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
