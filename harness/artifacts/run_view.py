"""Everything the grader may read of one run, loaded once: the run's preserved artifacts only.

A `RunView` is built from a run directory (job.json, run.json, trace.jsonl, snapshots/,
usage.jsonl, transcript.jsonl, context.json, state/, workspace/) and nothing else, so a
grade can be recomputed later, elsewhere, without the agent. Missing essentials raise
`MissingArtifacts`, which the grader turns into the status `ungradeable`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compiler.contract import CheckSpec, CorruptJob, Job
from harness.artifacts import names, readers, run_tree
from harness.artifacts.records import RunRecord, read_run


class MissingArtifacts(Exception):
    """The run directory cannot be graded at all: no evidence, which is not bad evidence."""


@dataclass(frozen=True)
class RunView:
    """One run's artifacts, read and normalised."""

    run_dir: Path
    job: Job
    record: RunRecord
    trace: readers.Trace
    snapshots: tuple[readers.Snapshot, ...]
    transcript: readers.Transcript
    turns: tuple[readers.Turn, ...]
    usage_malformed: int
    usage_present: bool
    context: readers.Context
    checks: tuple[CheckSpec, ...]
    """The checks to grade by: the project's current ones when known, else the job's."""
    expectations: tuple[dict[str, Any], ...]
    seed: Path | None = None
    """The scenario's seed folder in the project, when the project is known."""
    cache: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    """Results shared between checks and sections of one grading pass (snapshot validity)."""

    @property
    def workspace(self) -> Path:
        """The preserved final workspace (never modified by grading)."""
        return self.run_dir / names.WORKSPACE_DIR

    @property
    def state_dir(self) -> Path:
        """The treatment's state directory."""
        return self.run_dir / names.STATE_DIR

    @property
    def last_write(self) -> float | None:
        """Time of the agent's last write to a watched file, or None when it wrote none."""
        return self.snapshots[-1].t if self.snapshots else None

    def events(self, name: str = names.EVENTS_FILE) -> tuple[dict[str, Any], ...] | None:
        """A JSONL event log in the state directory, or None when the treatment wrote none."""
        return readers.read_events(self.state_dir, name)


def read_job(run_dir: Path, project: Path | None = None) -> Job:
    """The run's job.json, verified (a damaged one restored from the project's generated/ when
    that still compiles the same job), or MissingArtifacts saying why."""
    try:
        return run_tree.read_job(run_dir, generated=project / "generated" if project is not None else None)
    except FileNotFoundError:
        raise MissingArtifacts(f"{names.JOB_FILE} is missing") from None
    except CorruptJob as exc:
        raise MissingArtifacts(f"{names.JOB_FILE} is corrupt: {exc}") from None
    except OSError as exc:
        raise MissingArtifacts(f"{names.JOB_FILE} cannot be read: {exc}") from None


def load_view(
    run_dir: Path,
    *,
    record: RunRecord | None = None,
    job: Job | None = None,
    checks: tuple[CheckSpec, ...] | None = None,
    expectations: tuple[dict[str, Any], ...] | None = None,
    seed: Path | None = None,
) -> RunView:
    """Read a run directory; raise MissingArtifacts when it holds nothing to grade."""
    record = record or read_run(run_dir)
    job = job or read_job(run_dir)
    if not (run_dir / names.WORKSPACE_DIR).is_dir():
        raise MissingArtifacts(f"{names.WORKSPACE_DIR}/ is missing: the final workspace was not preserved")
    # A multi-step run keeps earlier sessions' adapter files in steps/step-NN/; usage,
    # transcript and loaded context are the whole run's, oldest session first.
    sessions = [*sorted((run_dir / names.STEPS_DIR).glob(f"{names.STEP_PREFIX}*")), run_dir]
    turns: list[readers.Turn] = []
    rows: list[dict[str, Any]] = []
    loaded: list[str] = []
    bad_usage = 0
    context = readers.Context()
    for folder in sessions:
        these, bad = readers.read_usage(folder / names.USAGE_FILE)
        turns += these
        bad_usage += bad
        rows += readers.read_transcript(folder / names.TRANSCRIPT_FILE).rows
        ctx = readers.read_context(folder / names.CONTEXT_FILE)
        loaded += [item for item in ctx.loaded if item not in loaded]
        if ctx.present:
            context = readers.Context(tuple(loaded), True, ctx.error or context.error)
    return RunView(
        run_dir=run_dir,
        job=job,
        record=record,
        trace=readers.read_trace(run_dir / names.TRACE_FILE),
        snapshots=readers.read_snapshots(run_dir / names.SNAPSHOTS_DIR),
        transcript=readers.Transcript(tuple(rows), bool(rows)),
        turns=tuple(sorted(turns, key=lambda u: u.t)),
        usage_malformed=bad_usage,
        usage_present=bool(turns),
        context=context,
        checks=job.scenario.checks if checks is None else checks,
        expectations=job.scenario.expectations if expectations is None else expectations,
        seed=seed,
    )
