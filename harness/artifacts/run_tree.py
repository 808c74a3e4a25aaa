"""Where a trial's run directory lives, and whether it holds a finished run of a job.

The tree is `runs/<matrix>/[<version>/]<scenario>/<agent>/<cell>/trial-NN/`; nothing reads a
run's coordinates back from its path (run.json carries them). A run directory counts as
finished only when its run.json was written (last, atomically) for the same job hash and
trial and was not interrupted — so a killed or interrupted trial, or one whose spec changed,
is run again, and a finished one is never run twice.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path
from typing import Any

from compiler.contract import CorruptJob, Job, load_job, read_job_file, with_digest
from harness.artifacts.names import JOB_FILE, RUN_DIR_FOLDERS, RUN_FILE
from harness.artifacts.records import read_run
from harness.artifacts.store import write_atomic


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
    """Remove whatever an unfinished earlier attempt left (run.json first, so nothing looks finished).

    A run.json that is not a file (a folder of that name in a damaged tree) never looks finished and
    goes with the rest."""
    if not run_dir.exists():
        return
    record = run_dir / RUN_FILE
    if record.is_symlink() or not record.is_dir():
        record.unlink(missing_ok=True)
    # Read-only copies of knowledge folders must become writable before they can be removed.
    for dirpath, _dirs, _files in os.walk(run_dir):
        mode = os.stat(dirpath).st_mode
        if not mode & stat.S_IWUSR:
            os.chmod(dirpath, mode | stat.S_IWUSR)
    shutil.rmtree(run_dir)


def start_run(run_dir: Path, job: Job) -> None:
    """A fresh run directory holding only job.json (what a regrade elsewhere needs)."""
    clear(run_dir)
    run_dir.mkdir(parents=True)
    # Not synced to disk: a run that a crash of the machine interrupts has no run.json and runs
    # again; a finished one whose job.json a crash damaged is restored from generated/ (read_job).
    write_job(run_dir, job, durable=False)


def write_job(run_dir: Path, job: Job, *, durable: bool = True) -> None:
    """job.json, carrying the digest that every read recomputes."""
    data = with_digest(job).model_dump(mode="json")
    write_atomic(run_dir / JOB_FILE, json.dumps(data, indent=2, sort_keys=True) + "\n", durable=durable)


def read_job(run_dir: Path, *, generated: Path | None = None) -> Job:
    """A run's job.json, verified; a damaged one is restored from `generated/` when that still
    compiles the same job (same id and hash as run.json records), else CorruptJob says so.

    Raises:
        CorruptJob: damaged and not restorable (never mistaken for a job of another spec).
        FileNotFoundError: the run has no job.json and none could be restored.
    """
    try:
        return read_job_file(run_dir / JOB_FILE)
    except (CorruptJob, FileNotFoundError) as exc:
        restored = _restore_job(run_dir, generated) if generated is not None else None
        if restored is None:
            raise
        write_job(run_dir, restored)
        del exc
        return restored


def _restore_job(run_dir: Path, generated: Path) -> Job | None:
    try:
        record = read_run(run_dir)
        job = load_job(generated, record.job_id)
    except (OSError, ValueError, KeyError):
        return None
    return job if job.hash == record.job_hash and job.trial == record.trial else None


def identity(job: Job) -> dict[str, Any]:
    """The fields of run.json that place a run in the matrix, all taken from its job."""
    return {
        "job_id": job.id,
        "job_hash": job.hash,
        "matrix": job.matrix,
        "scenario": job.scenario.id,
        "cell": job.cell.name,
        "levels": dict(job.cell.levels),
        "control": job.cell.control,
        "agent": job.agent.id,
        "sanity": job.agent.sanity,
        "trial": job.trial,
        "version": job.version,
        "model": job.agent.model,
    }


def find_runs(root: Path) -> list[Path]:
    """Every run directory under root, found by manifest rather than by depth, sorted.

    A run directory's own artifact folders are not descended into: a workspace may hold
    anything, including a file an agent named run.json. A run.json that is not a file (a folder
    of that name) still marks a run: an unreadable one, counted, never silently left out.
    """
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        if RUN_FILE in filenames or RUN_FILE in dirnames:
            found.append(Path(dirpath))
            dirnames[:] = []
            continue
        dirnames[:] = [d for d in dirnames if d not in RUN_DIR_FOLDERS]
    return sorted(found)
