"""The tool-use collector's socket stays short wherever the runs tree (and so tempfile's dir) is."""

from __future__ import annotations

import socket
import tempfile
from pathlib import Path

import pytest

from harness.trial.tracing import Collector


def test_the_collector_listens_although_the_scratch_folder_is_deep(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A runner points tempfile's folder into `<runs>/.scratch/<pid>`; a deep runs tree put the
    # collector's socket past the 107 bytes a Unix socket path may have (every trial: error).
    deep = tmp_path / ("r" * 120) / "runs" / ".scratch" / "4242"
    deep.mkdir(parents=True)
    monkeypatch.setattr(tempfile, "tempdir", str(deep))
    tools = tmp_path / "tools.json"
    tools.write_text("{}")
    with Collector(tools) as collector:
        assert len(str(collector.socket_path).encode()) <= 107
        assert not collector.folder.is_relative_to(deep)
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.connect(str(collector.socket_path))
    assert not collector.folder.exists()
