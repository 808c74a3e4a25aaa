"""One trial, end to end: prepare → provision → run → capture, then run.json.

`run_trial(job, project=..., run_dir=...)` is pure in the sense the executors need: a job in,
a run directory out, nothing shared with other trials. It never raises for a trial that went
wrong — a crash, a failing provision, an adapter that cannot start, a provider outage the gateway
saw through the last retry become `error` (with the traceback) on run.json, while how the agent's
own doing ended it is `agent_end` (graded) — and it writes run.json last and atomically, so a
killed runner leaves nothing that looks finished.

Each stage is a function of its module: `prepare.new_trial` (folders, a fresh workspace),
`provision.provide` (the cell's world, the gateway, the sandbox, setup, baseline, canaries),
`session.run_steps` (the agent's sessions) and `capture.collect` (diff, unsafe edits). What
they leave for run.json is gathered in a `record.Outcome`, read also when one of them failed.
"""

from __future__ import annotations

import threading
import traceback
from pathlib import Path

from compiler.contract import Job
from harness.artifacts.names import GRADE_FILE, RUN_FILE
from harness.artifacts.records import RunRecord
from harness.artifacts.run_tree import start_run
from harness.artifacts.store import write_record
from harness.sandbox import disk
from harness.sandbox.isolation import select
from harness.trial import capture, faults, prepare, provision, session
from harness.trial.record import Outcome, record

__all__ = ["run_trial"]


def run_trial(
    job: Job, *, project: Path, run_dir: Path, cancel: threading.Event | None = None, concurrent: bool = False
) -> RunRecord:
    """Run one trial into `run_dir` and return its run.json record (also written there).

    Args:
        job: The trial.
        project: The project root (holds generated/, scenarios/...); job paths are relative to it.
        run_dir: The trial's run directory; whatever an unfinished attempt left there is removed.
        cancel: Set to stop the trial (it is recorded as interrupted and rerun on resume).
        concurrent: Whether other trials share the machine (recorded; wall-clock not comparable).
    """
    project, run_dir = project.resolve(), run_dir.resolve()
    disk.sweep_once()  # a killed runner's mounts, before the run directory is cleared
    start_run(run_dir, job)
    faults.stop_point("preparing", run_dir, cancel)
    out = Outcome(iso=select(job.options.isolation))
    try:
        trial = prepare.new_trial(job, project=project, run_dir=run_dir, limit_disk=True)
        out.disk, out.disk_note = trial.disk, trial.disk_note
        out.lap("workspace")
        faults.stop_point("provisioning", run_dir, cancel)
        ready = provision.provide(trial, out)
        session.run_steps(trial, ready, out, cancel=cancel)
        out.lap("agent")
        faults.stop_point("capturing", run_dir, cancel)
        capture.collect(trial, out)
        out.lap("capture")
    except session.Interrupted:
        out.fields.update(interrupted=True, error="interrupted")
    except (
        Exception
    ) as exc:  # the per-trial boundary: any failure of this trial is data, never a crash of the matrix
        out.fields.update(error=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc())
    finally:
        out.close(run_dir)
    # The agent could write into its run dir; a verdict there is never its own to write.
    (run_dir / GRADE_FILE).unlink(missing_ok=True)
    done = record(job, run_dir, out, concurrent=concurrent)
    faults.stop_point("recording", run_dir, cancel)
    write_record(run_dir / RUN_FILE, done)
    return done
