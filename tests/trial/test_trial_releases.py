"""Every way a trial ends releases its size-limited filesystems: real tmpfs mounts, a real trial.

A root harness mounts a tmpfs per trial (`harness.sandbox.disk`) before the seed is copied; a trial
that fails to prepare, or whose end cannot be written (a full disk under trace.jsonl), must still
leave nothing mounted in its run directory once `run_trial` or `Outcome.close` is over.
"""

from __future__ import annotations

import errno
import json
import socket
from pathlib import Path

import pytest

from harness.sandbox import disk
from harness.sandbox.isolation import select
from harness.trial import run_trial
from harness.trial.record import Outcome
from harness.trial.tracing import TOKEN_VAR, Collector
from tests.helpers import fix_scenario, make_job
from tests.mounting import fill, mounts_under

pytestmark = pytest.mark.isolation


def test_a_trial_whose_seed_is_gone_leaves_nothing_mounted(project: Path, root_mounts: Path) -> None:
    job = make_job(fix_scenario().model_copy(update={"seed": "scenarios/fix/gone"}))
    run_dir = root_mounts / "run"
    record = run_trial(job, project=project, run_dir=run_dir)
    assert record.error is not None and "scenarios/fix/gone" in record.error
    assert mounts_under(run_dir) == []
    assert not (run_dir / ".disk").exists()


def _send_row(collector: Collector) -> None:
    """A row over the collector's socket, as the tool runner sends it (registered with a token)."""
    _argv, env = collector.wrap(["true"], {})
    with socket.socket(socket.AF_UNIX) as sock, sock.makefile("rb") as replies:
        sock.connect(str(collector.socket_path))
        sock.sendall(f"HELLO {env[TOKEN_VAR]} 1\n".encode())
        assert replies.readline() == b"OK\n"
        sock.sendall(json.dumps({"tool": "mytool", "argv": ["mytool"], "exit": 0, "ack": 1}).encode() + b"\n")
        assert replies.readline() == b"ACK\n"
    collector.done()  # the runner has hung up


def test_a_full_disk_under_trace_jsonl_still_unmounts_the_trial(small_fs: Path, tmp_path: Path) -> None:
    run_dir = small_fs / "run"
    run_dir.mkdir()
    folders = [run_dir / name for name in ("workspace", "home", "tmp", "state")]
    out = Outcome(iso=select("none"))
    out.disk = disk.mount(run_dir, folders, size_mb=4, outbox=run_dir / ".sandbox-out", outbox_mb=1)
    (tmp_path / "tools.json").write_text("{}")
    out.tracer = out.closing.enter_context(Collector(tmp_path / "tools.json"))
    _send_row(out.tracer)
    assert len(mounts_under(run_dir)) == 6
    fill(small_fs)
    with pytest.raises(OSError) as full:
        out.close(run_dir)
    assert full.value.errno == errno.ENOSPC
    assert mounts_under(run_dir) == []
    assert not out.tracer.folder.exists()  # the collector ended too
