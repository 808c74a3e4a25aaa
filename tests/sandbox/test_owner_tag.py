"""Names of what a harness process mounts or makes (`harness.sandbox.identity.owner_tag`): abandoned
once the runner, or the worker that made it, is gone (real processes, really gone)."""

from __future__ import annotations

import os
import subprocess

from harness.sandbox.identity import owner_gone, owner_tag


def _gone_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_a_runner_names_what_it_makes_after_itself() -> None:
    assert owner_tag() == f"p{os.getpid()}"
    assert not owner_gone(f"assay-disk-{owner_tag()}")


def test_a_name_is_abandoned_when_its_runner_or_its_worker_is_gone() -> None:
    live, gone = os.getpid(), _gone_pid()
    assert owner_gone(f"job-1a2b3c4d-p{gone}")
    assert owner_gone(f"job-1a2b3c4d-p{live}w{gone}")  # a worker killed on its own
    assert owner_gone(f"assay-disk-p{gone}w{live}")  # a worker outliving its runner a moment
    assert not owner_gone(f"job-1a2b3c4d-p{live}w{live}")
    assert not owner_gone(f"job-p{gone}-not-ours")
    assert not owner_gone("job-pw")
