"""A trial stopped while its canaries run is interrupted, never invalid: a real trial, a real stop.

The canaries run in the agent's first launch, before it (`harness.sandbox.gate`). A stop (Ctrl-C,
fail-fast) that ends that launch before the canaries are over cuts them short: that is the
harness's doing, so the run is recorded interrupted (and run again on resume), without a verdict
of its canaries and without `invalid`, which the report would count as a broken cell.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from compiler.contract import Canaries
from harness.artifacts.records import RunRecord, read_run
from harness.trial import run_trial
from tests.helpers import command_agent, make_job, none_cell


def test_a_stop_during_the_canaries_is_an_interruption_not_a_failed_canary(
    project: Path, tmp_path: Path
) -> None:
    began = tmp_path / "canary-began"
    canary = f"touch {began}; sleep 60"
    cell = none_cell().model_copy(
        update={
            "provisions": none_cell().provisions.model_copy(
                update={"canaries": Canaries(absent=("mytool",), must_pass=(canary,))}
            )
        }
    )
    job = make_job(agent=command_agent(f"touch {tmp_path / 'agent-ran'}"), cell=cell)
    cancel = threading.Event()
    done: list[RunRecord] = []
    trial = threading.Thread(
        target=lambda: done.append(run_trial(job, project=project, run_dir=tmp_path / "run", cancel=cancel))
    )
    trial.start()
    deadline = time.monotonic() + 60
    while not began.exists() and trial.is_alive():
        assert time.monotonic() < deadline, "the canary never started"
        time.sleep(0.02)  # polls for a marker the canary writes; no verdict rides on timing
    cancel.set()
    trial.join(timeout=60)
    assert done, "the trial did not end"
    record = done[0]
    assert record.interrupted and record.error == "interrupted"
    assert record.invalid is None, record.invalid
    assert record.canaries == ()
    assert read_run(tmp_path / "run") == record
    assert not (tmp_path / "agent-ran").exists()
