"""harness.sandbox.spawn with real processes: a conversation over the pipes, its limits, its end."""

from __future__ import annotations

import sys
from pathlib import Path

from harness.sandbox.spawn import spawn
from tests.runner.test_proc import _wait_gone

ENV = {"PATH": "/usr/bin:/bin"}
ECHO = "import sys\nfor line in sys.stdin:\n    print(line.strip().upper(), flush=True)\n"


def test_a_conversation_line_by_line_then_the_whole_tree_ends(tmp_path: Path) -> None:
    marker = f"spawn-marker-{tmp_path.name}"
    script = tmp_path / "echo.py"
    script.write_text(ECHO + f"import subprocess\nsubprocess.Popen(['sleep', '300', '{marker}'])\n")
    process = spawn([sys.executable, str(script)], cwd=tmp_path, env=ENV)
    try:
        for word in ("one", "two"):
            assert process.send(f"{word}\n".encode(), timeout_s=10)
            assert next(process.lines(timeout_s=10, cap=1 << 20)) == word.upper().encode()
        # a line read in part waits for its end; nothing is lost between calls
        assert process.send(b"three\nfour\n", timeout_s=10)
        got = process.lines(timeout_s=10, cap=1 << 20)
        assert [next(got), next(got)] == [b"THREE", b"FOUR"]
        assert process.alive()
    finally:
        process.close()
    assert not process.alive()
    assert _wait_gone(marker) == []  # its child went with it


def test_reading_stops_at_the_deadline_the_cap_and_the_end(tmp_path: Path) -> None:
    quiet = spawn(["sleep", "30"], cwd=tmp_path, env=ENV)
    try:
        assert list(quiet.lines(timeout_s=0.2, cap=100)) == []  # nothing within the deadline
        assert not quiet.send(b"x" * (1 << 20), timeout_s=0.5)  # it never reads: the send gives up
    finally:
        quiet.close()
    loud = spawn(["sh", "-c", "yes spam"], cwd=tmp_path, env=ENV)
    try:
        assert sum(len(line) + 1 for line in loud.lines(timeout_s=30, cap=10_000)) < 10_000 + 70_000
    finally:
        loud.close()
    done = spawn(["sh", "-c", "echo last"], cwd=tmp_path, env=ENV)
    try:
        assert list(done.lines(timeout_s=30, cap=100)) == [b"last"]  # it ended: no wait for the deadline
    finally:
        done.close()
