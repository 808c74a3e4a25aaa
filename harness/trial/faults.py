"""Stage boundaries a fault-injection test can stop a runner at, deterministically.

With `ASSAY_FAULT_AT=<stage>` and `ASSAY_FAULT_DIR=<folder>` in the runner's environment, the
first trial to reach that stage writes `<folder>/<stage>` (naming its run directory) and then
blocks until the runner is killed or stopped: the test waits for the file instead of guessing with sleeps.
Stages: preparing, provisioning, capturing, recording (here), grading (the executor). Without
the variables this is one dictionary lookup.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

STAGES = ("preparing", "provisioning", "capturing", "grading", "recording")
_claimed = threading.Lock()


def stop_point(stage: str, run_dir: Path, cancel: threading.Event | None) -> None:
    """Block here when the fault-injection variables name this stage (tests only): until the
    process is killed, or until the batch is stopped (SIGTERM, SIGINT), then carry on as a
    stopped trial would."""
    if os.environ.get("ASSAY_FAULT_AT") != stage or not _claimed.acquire(blocking=False):
        return
    marker = Path(os.environ["ASSAY_FAULT_DIR"]) / stage
    marker.write_text(str(run_dir), encoding="utf-8")
    (cancel or threading.Event()).wait()
