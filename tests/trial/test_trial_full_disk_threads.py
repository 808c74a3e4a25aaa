"""The harness's background threads on a full disk: the snapshot watcher and the tool-use
collector's mirror. Neither prints a traceback (pytest makes an unhandled thread exception an
error); each hands its error to the trial, which records it (real tmpfs, real threads, a real
socket)."""

from __future__ import annotations

import errno
import json
import socket
import threading
from pathlib import Path

import pytest

from harness.trial.snapshots import Watcher
from harness.trial.tracing import TOKEN_VAR, Collector
from tests.mounting import fill

pytestmark = pytest.mark.isolation


def test_the_snapshot_watcher_on_a_full_disk_raises_on_exit(small_fs: Path, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "main.py").write_text("v1\n")
    out = small_fs / "snapshots"
    out.mkdir()
    fill(small_fs)
    with pytest.raises(OSError) as full, Watcher(ws, ["main.py"], out):
        (ws / "main.py").write_text("v2, a version the watcher cannot keep\n" * 1000)
        for thread in threading.enumerate():  # its first write fails: it stops watching
            if thread.name == "snapshots":
                thread.join(timeout=30)
        assert not any(t.name == "snapshots" for t in threading.enumerate())
    assert full.value.errno == errno.ENOSPC


def test_the_tool_use_mirror_on_a_full_disk_fails_the_trace(
    small_fs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TMPDIR", str(small_fs))  # where the collector's folder (and mirror) goes
    (tmp_path / "tools.json").write_text("{}")
    with Collector(tmp_path / "tools.json") as collector:
        fill(small_fs)
        _argv, env = collector.wrap(["true"], {})
        with socket.socket(socket.AF_UNIX) as sock, sock.makefile("rb") as replies:
            sock.connect(str(collector.socket_path))
            sock.sendall(f"HELLO {env[TOKEN_VAR]} 1\n".encode())
            assert replies.readline() == b"OK\n"
            row = {"tool": "mytool", "argv": ["mytool", "x" * 8192], "exit": 0, "ack": 1}
            sock.sendall(json.dumps(row).encode() + b"\n")
            assert replies.readline() == b"ACK\n"  # the row is kept: the runner goes on
        collector.done()
        with pytest.raises(OSError) as full:
            collector.write(tmp_path / "trace.jsonl")
    assert full.value.errno == errno.ENOSPC
    assert "Traceback" not in capfd.readouterr().err
