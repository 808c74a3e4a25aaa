"""Cgroups left by harness processes that are gone (`harness.sandbox.isolation.cgroups`): the next
harness process removes them under every controller, whichever its own command needs, and never
one of a live process (real cgroups, real processes; root with cgroup v1 only)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.sandbox.isolation.cgroups import CGROUP_V1

ROOT = Path(__file__).resolve().parents[2]
PIDS = CGROUP_V1 / "pids" / "assay"

pytestmark = [
    pytest.mark.isolation,
    pytest.mark.skipif(
        os.geteuid() != 0 or not (CGROUP_V1 / "pids" / "cgroup.procs").exists(),
        reason="cgroup v1 pids controller as root needed",
    ),
]


@pytest.fixture
def made() -> Iterator[list[Path]]:
    """Cgroups a test made: removed after it, whatever it found."""
    paths: list[Path] = []
    yield paths
    for path in paths:
        if path.exists():
            path.rmdir()


def test_a_harness_that_makes_only_a_memory_cgroup_removes_an_abandoned_pids_one(made: list[Path]) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    tag = uuid.uuid4().hex[:8]
    PIDS.mkdir(parents=True, exist_ok=True)
    orphan, live = PIDS / f"test-{tag}o-p{gone.pid}", PIDS / f"test-{tag}l-p{os.getpid()}"
    made += [orphan, live]
    orphan.mkdir()
    live.mkdir()
    code = (
        "from harness.sandbox.isolation.cgroups import make_cgroup\n"
        f"path = make_cgroup('memory', 'test-{tag}m-p1', {{}}, {{}})\n"
        "print(path); path.rmdir()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0 and done.stdout.strip() != "None", done.stderr
    assert (orphan.exists(), live.exists()) == (False, True)
