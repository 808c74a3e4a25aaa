"""One fully resolved trial (`Job`), its limits and options, its digest and its id."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import ClassVar

from pydantic import Field

from compiler.contract.base import SCHEMA_VERSION, Frozen, OmitUnset
from compiler.contract.parts import AgentSpec, Cell
from compiler.contract.scenario import ScenarioJob

LIMITS_OFF = "none"
"""What a spec writes to turn one of the limits below off (YAML null means "not set here")."""

BUDGETS = ("input_tokens", "output_tokens", "total_tokens", "model_requests", "cost_usd")
"""The limits that are budgets of model spend (the model gateway enforces them)."""

ISOLATIONS = ("auto", "bwrap", "none", "unshare")
"""The isolation plug-ins' short names (harness/sandbox/isolation REGISTRY, and `auto`); any other
isolation is named by a dotted path `pkg.mod:Class`."""


class Limits(OmitUnset):
    """Per-trial resource limits. Every resource limit is on by default; a spec turns one off only by
    writing `none` (a limit left out keeps its default), and run.json says which applied and which
    were hit. The budgets of model spend (BUDGETS) are off unless set."""

    timeout_s: float = Field(default=600.0, gt=0, description="Agent wall-clock limit per session.")
    output_bytes: int | None = Field(
        default=10_000_000,
        ge=0,
        description="Cap on the agent's captured stdout+stderr; None (`none`): no cap.",
    )
    memory_mb: int | None = Field(
        default=4096, ge=1, description="Memory limit of the agent's process tree; None (`none`): unlimited."
    )
    pids: int | None = Field(
        default=1024,
        ge=1,
        description="Processes (and threads) the agent may have at once; None (`none`): unlimited.",
    )
    file_size_mb: int | None = Field(
        default=1024, ge=0, description="Largest file the agent may write; None (`none`): unlimited."
    )
    workspace_mb: int | None = Field(
        default=1024,
        ge=0,
        description="Total size of the agent's writable folders (workspace, HOME, TMPDIR, state); None (`none`): unlimited.",
    )
    outbox_mb: int | None = Field(
        default=256,
        ge=0,
        description="Total size of what one command writes into the run directory (usage, transcript, logs); None (`none`): unlimited.",
    )
    cpus: float | None = Field(
        default=None,
        gt=0,
        description="CPUs the agent's process tree may use; None: as many as the machine has.",
    )
    check_timeout_s: float = Field(default=60.0, gt=0, description="Default per-check wall-clock limit.")
    # Budgets: what the agent may spend on its model in one trial, counted by the model gateway as
    # requests pass; None: no budget. Kept out of the JSON when unset, so a spec without budgets
    # keeps its job hashes.
    input_tokens: int | None = Field(
        default=None, ge=1, description="Budget of input tokens (uncached, cache read and cache write)."
    )
    output_tokens: int | None = Field(
        default=None, ge=1, description="Budget of output tokens (reasoning included)."
    )
    total_tokens: int | None = Field(default=None, ge=1, description="Budget of input plus output tokens.")
    model_requests: int | None = Field(default=None, ge=1, description="Budget of model requests.")
    cost_usd: float | None = Field(
        default=None, gt=0, description="Budget in USD, priced from specs/prices.yaml."
    )

    _omit_unset: ClassVar[tuple[str, ...]] = BUDGETS

    def budgets(self) -> dict[str, float]:
        """The budgets that are set, by name."""
        return {name: value for name in BUDGETS if (value := getattr(self, name)) is not None}


class Options(Frozen):
    """Matrix options that shape how a trial runs."""

    env_pass: tuple[str, ...] = Field(
        default=(), description="Host environment variables passed into the scrubbed environment."
    )
    infra_retries: int = Field(default=2, ge=0, description="Retries of an adapter that exits 75.")
    isolation: str = Field(
        default="auto", description="Isolation plug-in name: auto, bwrap, unshare, none, or a dotted path."
    )
    skill_dir: str | None = Field(
        default=None, description="Project-relative guide folder for levels that use one."
    )
    wiki_dir: str | None = Field(
        default=None, description="Project-relative knowledge folder for levels that link one."
    )


class Job(Frozen):
    """One fully resolved trial."""

    schema_version: int = Field(default=SCHEMA_VERSION, description="Contract version.")
    id: str = Field(description="<matrix>/<cell>/<agent>/<scenario>/tNN")
    hash: str = Field(
        description="Content hash of everything but the trial number; a changed spec changes it."
    )
    matrix: str = Field(description="Matrix id.")
    trial: int = Field(description="1-based trial number.")
    version: str | None = Field(default=None, description="Tool version label in a version comparison.")
    scenario: ScenarioJob = Field(description="The scenario, resolved.")
    cell: Cell = Field(description="The cell and its merged provisions.")
    agent: AgentSpec = Field(description="The agent and its arguments.")
    limits: Limits = Field(default_factory=Limits, description="Per-trial limits.")
    options: Options = Field(default_factory=Options, description="Run options.")
    digest: str | None = Field(
        default=None,
        description="sha256 of this job's canonical JSON without this field, written into a run's job.json "
        "and recomputed on every read of it, so a damaged or edited job file is told from a changed spec.",
    )


class CorruptJob(ValueError):
    """A job file that is truncated, not a job, from a newer assay, or whose digest does not match."""


def job_digest(job: Job) -> str:
    """The digest a job file carries (over every field but `digest` itself)."""
    data = job.model_dump(mode="json", exclude={"digest"})
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def with_digest(job: Job) -> Job:
    """The job as a run's job.json holds it: carrying its digest."""
    return job.model_copy(update={"digest": job_digest(job)})


def read_job_file(path: Path | str) -> Job:
    """Read one job JSON file, verified: its schema version, and its digest when it carries one.

    Raises:
        CorruptJob: unreadable, not a job, newer than this assay, or the digest disagrees.
        OSError: the file cannot be read at all.
    """
    raw = Path(path).read_bytes()
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise CorruptJob(f"{path}: not JSON (truncated or damaged): {exc}") from None
    if not isinstance(data, dict):
        raise CorruptJob(f"{path}: not a job (a JSON object is expected)")
    found = data.get("schema_version", SCHEMA_VERSION)
    if found != SCHEMA_VERSION:
        raise CorruptJob(
            f"{path}: schema_version {found!r}, this assay reads {SCHEMA_VERSION}; recompile and use a fresh job file"
        )
    try:
        job = Job.model_validate(data)
    except ValueError as exc:
        raise CorruptJob(f"{path}: not a job this assay can read ({str(exc).splitlines()[0]})") from None
    if job.digest is not None and job.digest != job_digest(job):
        raise CorruptJob(f"{path}: its digest does not match its content (the file was damaged or edited)")
    return job


def job_id(matrix: str, cell: str, agent: str, scenario: str, trial: int) -> str:
    """The stable id of one trial."""
    return f"{matrix}/{cell}/{agent}/{scenario}/t{trial:02d}"


class JobId(Frozen):
    """A parsed job id."""

    matrix: str = Field(description="Matrix id.")
    cell: str = Field(description="Cell name (levels joined by '/').")
    agent: str = Field(description="Agent id.")
    scenario: str = Field(description="Scenario id.")
    trial: int = Field(description="1-based trial number.")


def parse_job_id(value: str) -> JobId:
    """Split a job id; the cell is whatever lies between the matrix and the agent."""
    parts = value.split("/")
    if len(parts) < 5 or not parts[-1].startswith("t") or not parts[-1][1:].isdigit():
        raise ValueError(f"not a job id: {value!r} (expected <matrix>/<cell>/<agent>/<scenario>/tNN)")
    return JobId(
        matrix=parts[0],
        cell="/".join(parts[1:-3]),
        agent=parts[-3],
        scenario=parts[-2],
        trial=int(parts[-1][1:]),
    )


# ---------------------------------------------------------------------------
# generated/: the job files and the manifest, and how run-time code reads them.
# ---------------------------------------------------------------------------
