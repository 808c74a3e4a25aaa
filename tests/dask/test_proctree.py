"""Ending a trial's process tree, including a grandchild that left the process group."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time

from tests.dask.conftest import ROOT, alive

SCRIPT = """
import subprocess, sys, time
from harness.batch.executor.proctree import become_subreaper, kill_descendants
assert become_subreaper()
marker = sys.argv[1]
# The intermediate shell exits at once; its setsid'ed child is re-parented to us, the subreaper.
subprocess.run(["sh", "-c", f"setsid sleep {marker} & exit 0"], check=True)
subprocess.Popen(["sleep", marker])
time.sleep(0.5)
print(kill_descendants(), flush=True)
"""


def test_a_subreaper_ends_descendants_that_escaped_its_group() -> None:
    marker = f"{800 + random.randrange(1000)}.{os.getpid()}{random.randrange(10**6)}"
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, marker],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.strip()) >= 2
    deadline = time.monotonic() + 5
    while alive(marker, argv0="sleep") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert alive(marker, argv0="sleep") == []
