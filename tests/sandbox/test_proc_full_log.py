"""A command's log on a full disk (`harness.sandbox.proc.run`): the error reaches the caller, the
command is ended, and the reader thread prints nothing (a real tmpfs, a real process)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from harness.sandbox import proc
from tests.mounting import fill

pytestmark = pytest.mark.isolation


def test_a_log_on_a_full_disk_ends_the_command_and_is_raised(small_fs: Path, tmp_path: Path) -> None:
    log = small_fs / "agent.log"
    log.touch()
    fill(small_fs)
    began = tmp_path / "began"
    with pytest.raises(OSError) as full:
        # Without the error it would print until its timeout (the output cap is off), unread.
        proc.run(
            ["sh", "-c", f"touch {began}; while :; do echo output; done"],
            cwd=tmp_path,
            env={"PATH": os.environ["PATH"]},
            log=log,
            output_cap=None,
            timeout_s=30,
        )
    assert full.value.errno == errno.ENOSPC and full.value.filename == str(log)
    assert began.exists()
