"""Where a trial's run directory lives, and whether it holds a finished run of a job.

The tree is `runs/<matrix>/[<version>/]<scenario>/<agent>/<cell>/trial-NN/`; nothing reads a
run's coordinates back from its path (run.json carries them). A run directory counts as
finished only when its run.json was written (last, atomically) for the same job hash and
trial and was not interrupted — so a killed or interrupted trial, or one whose spec changed,
is run again, and a finished one is never run twice.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from compiler.contract import Job
from harness.records import RUN_FILE, read_run

JOB_FILE = "job.json"


def run_dir_for(job: Job, runs_root: Path) -> Path:
    """The run directory of a job under `runs_root`."""
    parts = [job.matrix]
    if job.version:
        parts.append(job.version)
    parts += [job.scenario.id, job.agent.id, *job.cell.name.split("/"), f"trial-{job.trial:02d}"]
    return runs_root.joinpath(*parts)


def is_finished(run_dir: Path, job: Job) -> bool:
    """True when run_dir holds a finished, uninterrupted run of this very job."""
    if not (run_dir / RUN_FILE).is_file():
        return False
    try:
        record = read_run(run_dir)
    except (ValueError, OSError):
        return False
    return record.job_hash == job.hash and record.trial == job.trial and not record.interrupted


def clear(run_dir: Path) -> None:
    """Remove whatever an unfinished earlier attempt left (run.json first, so nothing looks finished)."""
    if not run_dir.exists():
        return
    (run_dir / RUN_FILE).unlink(missing_ok=True)
    # Read-only copies of knowledge folders must become writable before they can be removed.
    for dirpath, _dirs, _files in os.walk(run_dir):
        mode = os.stat(dirpath).st_mode
        if not mode & stat.S_IWUSR:
            os.chmod(dirpath, mode | stat.S_IWUSR)
    shutil.rmtree(run_dir)
