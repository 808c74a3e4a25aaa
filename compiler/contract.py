"""The public artifact contract between compile time and run time.

`harness` and `adapters` import from `compiler` only this module: the shapes of
`generated/manifest.json` and of the job files, and the helpers that find one
trial's job by id. Everything here is a frozen pydantic model that forbids unknown
keys, so a job file written by a newer compiler is refused rather than half-read.

A job is one fully resolved trial: everything the runner needs, nothing to look up
in `specs/`. Paths inside a job are relative to the project root (the folder that
holds `generated/`), slash-separated, and never absolute, so `generated/` can be
moved with its project and compiling twice gives byte-identical files.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

SCHEMA_VERSION = 1
"""Version of manifest.json and job files; bump on a change an older reader would misread."""


class Frozen(BaseModel):
    """Base of every contract model: immutable, unknown keys refused."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class OmitUnset(Frozen):
    """A contract model whose optional features stay out of its JSON while unset (None): a spec that
    does not use them keeps its job hashes and its byte-identical generated/."""

    _omit_unset: ClassVar[tuple[str, ...]] = ()

    @model_serializer(mode="wrap")
    def _without_unset(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        for name in self._omit_unset:
            if data.get(name) is None:
                data.pop(name, None)
        return data


class Canaries(Frozen):
    """Commands that prove a level's provisions before the agent starts."""

    absent: tuple[str, ...] = Field(
        default=(), description="Command names that must NOT be found on the agent's PATH."
    )
    must_fail: tuple[str, ...] = Field(
        default=(),
        description="Shell commands that must exit non-zero in the agent's environment (e.g. a network probe under network: off).",
    )
    must_pass: tuple[str, ...] = Field(
        default=(),
        description="Shell commands that must exit zero in the agent's environment (e.g. the tool answers --version).",
    )
    network: Literal["off", "on"] | None = Field(
        default=None,
        description="Prove the network against a listener the harness opens on the host's loopback: `off`, nothing reaches it; `on`, it answers (through the sandbox's way out).",
    )


class McpServer(Frozen):
    """An MCP server a level provides; the adapter translates it for its agent."""

    command: tuple[str, ...] = Field(description="argv that starts the server (stdio transport).")
    env: dict[str, str] = Field(default_factory=dict, description="Extra environment for the server process.")


class Provisions(Frozen):
    """What a cell provides, merged over its levels in factor order (later levels win)."""

    path: tuple[str, ...] = Field(
        default=(),
        description="Project-relative folders whose executables go on PATH through the tracing shim.",
    )
    trace: tuple[str, ...] = Field(
        default=(), description="Command names whose invocations are traced into trace.jsonl."
    )
    serve: tuple[str, ...] = Field(
        default=(),
        description="Subcommands that start a long-lived session whose stdin/stdout is teed line by line into the trace.",
    )
    files: dict[str, str] = Field(
        default_factory=dict,
        description="Workspace-relative destination -> project-relative source file copied into the workspace.",
    )
    home_files: dict[str, str] = Field(
        default_factory=dict,
        description="HOME-relative destination -> project-relative source file copied into the fresh HOME.",
    )
    links: dict[str, str] = Field(
        default_factory=dict,
        description="Workspace-relative name -> project-relative folder linked read-only (never counted as an edit).",
    )
    skill_dir: str | None = Field(
        default=None,
        description="Project-relative guide/skill folder handed to the adapter as BENCH_SKILL_DIR.",
    )
    env: dict[str, str] = Field(
        default_factory=dict, description="Extra environment variables for the agent."
    )
    network: bool = Field(
        default=False, description="Whether the agent may reach the network beyond its model endpoint."
    )
    setup: tuple[str, ...] = Field(
        default=(),
        description="Shell commands run in the workspace before the agent (not traced, not counted as edits).",
    )
    state_dir: bool = Field(
        default=False,
        description="Whether the treatment keeps a state directory that persists across the steps of a run.",
    )
    state_setup: tuple[str, ...] = Field(
        default=(),
        description="Shell commands that seed the state directory ($BENCH_STATE_DIR); they must write only there.",
    )
    mcp_servers: dict[str, McpServer] = Field(default_factory=dict, description="MCP servers by name.")
    adapter: dict[str, Any] = Field(
        default_factory=dict, description="Options the adapter must translate for its agent (e.g. web: true)."
    )
    canaries: Canaries = Field(default_factory=Canaries, description="Canaries run before the agent.")


class Cell(Frozen):
    """One combination of levels, e.g. bin/none/off."""

    name: str = Field(description="Levels joined by '/' in factor order.")
    levels: dict[str, str] = Field(description="Factor -> level, in factor order.")
    control: bool = Field(default=False, description="True for the project's control cell.")
    provisions: Provisions = Field(
        default_factory=Provisions, description="Merged provisions of the cell's levels."
    )


class AgentSpec(Frozen):
    """A named adapter plus its arguments."""

    id: str = Field(description="Agent id (slug), unique in the project.")
    adapter: str = Field(
        description="Built-in adapter short name, a dotted path 'pkg.mod', or 'command' for a shell command."
    )
    command: str | None = Field(
        default=None, description="Shell command for adapter 'command' (seed 000's --agent-cmd)."
    )
    args: dict[str, Any] = Field(
        default_factory=dict, description="Adapter arguments, passed as JSON in BENCH_AGENT_ARGS."
    )
    model: str | None = Field(default=None, description="Model id recorded in run.json (and passed in args).")
    version: str | None = Field(default=None, description="Agent version label recorded in run.json.")
    env: dict[str, str] = Field(
        default_factory=dict, description="Extra environment for the adapter process."
    )
    requires: tuple[str, ...] = Field(
        default=(), description="Executables/resources a worker must have to run this agent."
    )
    host_files: dict[str, str] = Field(
        default_factory=dict,
        description="Host files the command names (absolute path -> sha256, or `directory`), mounted read-only at the same path in the sandbox.",
    )
    sanity: Literal["pass", "fail"] | None = Field(
        default=None,
        description="A sanity agent (oracle: pass, no-op: fail): how the report reads its runs, not what runs "
        "(outside the job hash).",
    )


class CheckSpec(Frozen):
    """One deterministic check, resolved to a built-in kind with concrete parameters."""

    id: str = Field(description="Check id, unique within its scenario.")
    kind: str = Field(
        description="Built-in check kind the engine runs (user kinds are resolved to 'command')."
    )
    layer: str = Field(
        default="agent", description="What a failure implicates: 'agent' or a named product layer."
    )
    authority: str | None = Field(
        default=None, description="Named authority whose validity this check reports, if any."
    )
    severity: Literal["error", "warning"] = Field(
        default="error", description="Findings of an error-severity lint check make a passing run not usable."
    )
    timeout_s: float = Field(default=60.0, description="Wall-clock limit for the check.")
    source_kind: str | None = Field(
        default=None, description="The user kind this check was declared as, if any."
    )
    params: dict[str, Any] = Field(
        default_factory=dict, description="Kind-specific parameters (validated at compile time)."
    )


class Negative(Frozen):
    """A named overlay that must fail exactly the checks it names."""

    name: str = Field(description="Negative name (folder name under negatives/).")
    fails: tuple[str, ...] = Field(description="Ids of the checks the overlay must fail, and only those.")
    dir: str | None = Field(default=None, description="Project-relative overlay folder.")
    patch: str | None = Field(
        default=None, description="Project-relative unified diff applied instead of (or after) the overlay."
    )
    base: Literal["reference", "seed"] = Field(
        default="reference",
        description="What the overlay is laid on: seed + reference (assay's form) or the seed alone (seed 000's scenario.json, where negatives are overlays like the reference).",
    )


class Step(Frozen):
    """One agent session of a multi-session scenario."""

    name: str = Field(description="Step label used in artifacts.")
    prompt: str = Field(description="Rendered prompt for this session.")
    evidence: dict[str, str] = Field(
        default_factory=dict,
        description="Workspace-relative path -> project-relative source, present only during this step.",
    )
    fresh_repo: bool = Field(
        default=False, description="Reset the working tree to the cell's starting state before this step."
    )


SANDBOX_RESERVED = (
    "/bin",
    "/dev",
    "/etc",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/proc",
    "/run",
    "/sbin",
    "/sys",
    "/tmp",
    "/usr",
)
"""Folders of the sandbox's own toolchain view: a scenario cannot show anything there."""


def within(path: str, folder: str) -> bool:
    """Whether a slash path is the folder or lies under it."""
    return path == folder or path.startswith(folder.rstrip("/") + "/")


class ScenarioMount(Frozen):
    """A folder of the scenario visible at an absolute path inside the sandbox."""

    path: str = Field(description="Absolute path inside the sandbox (e.g. /data, /tests).")
    source: str = Field(description="Project-relative folder it shows.")
    writable: bool = Field(
        default=False,
        description="A per-trial copy the agent may change; the checks see its final state (else read-only).",
    )
    hidden: bool = Field(
        default=False, description="Only the checks (and validate) see it, never the agent: hidden tests."
    )


class Environment(Frozen):
    """What a scenario needs installed, built once into a cached environment and used offline."""

    python: str | None = Field(
        default=None, description="Interpreter version (major.minor) the agent and the checks run with."
    )
    pip: tuple[str, ...] = Field(default=(), description="pip requirements installed into it.")
    apt: tuple[str, ...] = Field(default=(), description="Debian packages it provides.")


class ScenarioLimits(Frozen):
    """A scenario's own limits; the compiler keeps each within the matrix's."""

    timeout_s: float | None = Field(default=None, description="Agent wall-clock limit per session.")
    cpus: float | None = Field(default=None, description="CPUs the agent's process tree may use.")
    memory_mb: int | None = Field(default=None, description="Memory limit of the agent's process tree.")


class ScenarioJob(Frozen):
    """A scenario as the runner and grader need it."""

    id: str = Field(description="Scenario id (= folder name).")
    root: str = Field(description="Project-relative scenario folder.")
    family: str = Field(description="Family of related scenarios (they share a split).")
    language: str | None = Field(default=None, description="Language of the entry, one the project supports.")
    split: Literal["train", "test"] | None = Field(default=None, description="train or test.")
    source: str | None = Field(default=None, description="Provenance of the requirement.")
    reference_note: str | None = Field(default=None, description="Provenance of the reference solution.")
    seed: str = Field(description="Project-relative seed folder (the initial workspace).")
    reference: str | None = Field(
        default=None, description="Project-relative reference overlay; never shown to agents."
    )
    grader: str | None = Field(
        default=None,
        description="Project-relative folder of grader-only files overlaid after the agent is gone.",
    )
    negatives: tuple[Negative, ...] = Field(default=(), description="Negatives.")
    entry: tuple[str, ...] = Field(
        default=(), description="Workspace-relative entry files checked by authorities."
    )
    watch: tuple[str, ...] = Field(
        default=(), description="Workspace-relative files snapshotted after each write (defaults to entry)."
    )
    writable: tuple[str, ...] = Field(
        default=("**",), description="Globs the agent may change; any other change is an unsafe edit."
    )
    runtime_only: tuple[str, ...] = Field(
        default=(), description="Claims only a live runtime could verify: reported, never passed."
    )
    stability_risk: bool = Field(
        default=False, description="Finishing safely needs the tool's stability checks, not only validity."
    )
    prompt: str = Field(description="Rendered prompt (the first step's prompt for multi-step scenarios).")
    steps: tuple[Step, ...] = Field(
        default=(), description="Sessions of a multi-session scenario; empty for a single session."
    )
    checks: tuple[CheckSpec, ...] = Field(description="Checks, in declaration order.")
    expectations: tuple[dict[str, Any], ...] = Field(
        default=(), description="Declarative expectations (the grader defines their shape)."
    )
    notable_exits: tuple[int, ...] = Field(
        default=(3, 4), description="Tool exit codes reported as findings (candidate owner/environment gaps)."
    )
    forbid_words: tuple[str, ...] = Field(default=(), description="Words the prompt must not contain.")
    state_setup: tuple[str, ...] = Field(
        default=(), description="Scenario-level commands that seed the treatment's state directory."
    )
    judges: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="Provider configurations of the LLM judges this scenario's `judge` checks name (from the project's `judges:`).",
    )
    tags: tuple[str, ...] = Field(default=(), description="Labels a matrix selects scenarios by.")
    workdir: str | None = Field(
        default=None,
        description="Absolute path where the workspace appears in the sandbox (agent, checks, validate); None: its own path.",
    )
    mounts: tuple[ScenarioMount, ...] = Field(
        default=(), description="Other folders of the scenario at absolute paths in the sandbox."
    )
    environment: Environment | None = Field(
        default=None, description="Interpreter and packages of the agent and the checks."
    )
    env: dict[str, str] = Field(
        default_factory=dict, description="Environment variables of the agent and the checks."
    )
    limits: ScenarioLimits | None = Field(
        default=None, description="The scenario's own limits (the job's `limits` already hold them)."
    )


LIMITS_OFF = "none"
"""What a spec writes to turn one of the limits below off (YAML null means "not set here")."""

BUDGETS = ("input_tokens", "output_tokens", "total_tokens", "model_requests", "cost_usd")
"""The limits that are budgets of model spend (the model gateway enforces them)."""


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

MANIFEST_FILE = "manifest.json"
JOBS_DIR = "jobs"


class Variant(Frozen):
    """One (cell, agent) pair of a job file; its trials are t01..tNN."""

    cell: str = Field(description="Cell name (a key of JobFile.cells).")
    agent: str = Field(description="Agent id (a key of JobFile.agents).")
    trials: int = Field(description="Number of trials; ids t01..tNN.")
    hash: str = Field(description="Content hash of the resolved job (everything but the trial number).")


class JobFile(Frozen):
    """`generated/jobs/<matrix>/<scenario>.json`: one scenario of one matrix, every variant.

    The scenario, cells and agents are written once and shared by the variants; a trial
    is the job `Job(scenario, cells[v.cell], agents[v.agent], limits, options, trial)`.
    """

    schema_version: int = Field(default=SCHEMA_VERSION, description="Contract version.")
    matrix: str = Field(description="Matrix id.")
    version: str | None = Field(
        default=None, description="Tool version label, if the matrix compares versions."
    )
    scenario: ScenarioJob = Field(description="The scenario, resolved.")
    cells: dict[str, Cell] = Field(description="Cells the variants use, by name.")
    agents: dict[str, AgentSpec] = Field(description="Agents the variants use, by id.")
    limits: Limits = Field(default_factory=Limits, description="Per-trial limits.")
    options: Options = Field(default_factory=Options, description="Run options.")
    variants: tuple[Variant, ...] = Field(description="(cell, agent) pairs in expansion order.")

    def jobs(self) -> Iterator[Job]:
        """Every trial of this file as a Job."""
        for v in self.variants:
            for t in range(1, v.trials + 1):
                yield self.job(v, t)

    def job(self, v: Variant, trial: int) -> Job:
        """One trial of one variant (ids of a version comparison read `<matrix>@<version>/...`)."""
        prefix = self.matrix if self.version is None else f"{self.matrix}@{self.version}"
        return Job(
            id=job_id(prefix, v.cell, v.agent, self.scenario.id, trial),
            hash=v.hash,
            matrix=self.matrix,
            trial=trial,
            version=self.version,
            scenario=self.scenario,
            cell=self.cells[v.cell],
            agent=self.agents[v.agent],
            limits=self.limits,
            options=self.options,
        )


class ScenarioEntry(Frozen):
    """A scenario as listed in the manifest."""

    id: str = Field(description="Scenario id.")
    root: str = Field(description="Project-relative folder.")
    family: str = Field(description="Family.")
    split: Literal["train", "test"] | None = Field(default=None, description="Split.")
    language: str | None = Field(default=None, description="Language.")


class RoundsPlan(Frozen):
    """How a matrix asks to run in rounds: until its comparisons are decided, or within a budget."""

    until: Literal["planned", "decided"] = Field(
        default="planned",
        description="decided: round by round, each comparison stops once its uplift is decided; planned: every trial.",
    )
    min_uplift: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description="The smallest uplift that matters (0: only 'differs from 0').",
    )
    budget_tokens: int | None = Field(
        default=None, ge=1, description="Matrix budget in tokens: no round is scheduled past it."
    )
    budget_cost_usd: float | None = Field(
        default=None,
        gt=0,
        description="Matrix budget in USD (specs/prices.yaml): no round is scheduled past it.",
    )


class MatrixEntry(OmitUnset):
    """A matrix as listed in the manifest, with its job index."""

    id: str = Field(
        description="Key of this entry: the matrix id, or `<matrix>@<version>` for one side of a version comparison."
    )
    matrix: str | None = Field(
        default=None, description="The matrix id (differs from `id` for a version side)."
    )
    version: str | None = Field(
        default=None, description="Version label of this side of a version comparison."
    )
    default: bool = Field(default=False, description="The matrix nox bench sessions come from.")
    description: str | None = Field(default=None, description="What it measures.")
    agents: tuple[str, ...] = Field(description="Agent ids.")
    cells: tuple[str, ...] = Field(description="Cells that occur in its jobs, product order.")
    scenarios: tuple[str, ...] = Field(description="Scenario ids that occur in its jobs.")
    trials: int = Field(description="Trials per variant.")
    jobs: int = Field(description="Total trial count.")
    parallel: int | None = Field(default=None, description="Concurrent trials.")
    seed: int | None = Field(default=None, description="Shuffle seed of the run order.")
    fail_fast: bool = Field(default=False, description="Stop at the first failed trial.")
    versions: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="Version comparison: name -> {label, path, package, build}."
    )
    files: dict[str, str] = Field(description="Scenario id -> job file, relative to generated/.")
    rounds: RoundsPlan | None = Field(
        default=None, description="Run in rounds (until decided, a budget); None: every trial at once."
    )

    _omit_unset: ClassVar[tuple[str, ...]] = ("rounds",)


class Session(Frozen):
    """A nox session the noxfile derives from the manifest."""

    name: str = Field(description="Session name, safe for nox -k and the shell.")
    matrix: str = Field(description="Matrix it runs.")
    cell: str | None = Field(default=None, description="Cell it runs (None: the whole matrix).")


class Manifest(Frozen):
    """`generated/manifest.json`: the single truth between compile and run."""

    schema_version: int = Field(default=SCHEMA_VERSION, description="Contract version.")
    fingerprint: str = Field(
        description="Hash over every input and the compiler itself; unchanged -> nothing to do."
    )
    project: str = Field(description="Project name.")
    spec_version: int = Field(description="Spec language version of the project.")
    inputs: dict[str, str] = Field(description="Project-relative input file -> sha256.")
    factor_order: tuple[str, ...] = Field(
        description="Factor names in order (JSON maps are written with sorted keys)."
    )
    factors: dict[str, tuple[str, ...]] = Field(description="Factor -> levels, in declaration order.")
    languages: tuple[str, ...] = Field(default=(), description="Languages the project supports.")
    cells: tuple[Cell, ...] = Field(description="Every cell the constraints allow, product order.")
    control: str = Field(description="The control cell.")
    agents: dict[str, AgentSpec] = Field(description="Every agent, by id.")
    scenarios: dict[str, ScenarioEntry] = Field(description="Every scenario, by id.")
    matrices: dict[str, MatrixEntry] = Field(description="Every matrix, by id, with its job index.")
    default_matrix: str | None = Field(default=None, description="The default matrix.")
    sessions: tuple[Session, ...] = Field(
        default=(), description="bench-<cell> sessions of the default matrix."
    )


def _check_version(found: object, what: Path) -> None:
    if not isinstance(found, int) or found > SCHEMA_VERSION:
        raise ValueError(
            f"{what}: schema_version {found!r} is newer than this assay understands ({SCHEMA_VERSION}); "
            "upgrade assay or recompile with this version"
        )


def _json_file(path: Path) -> Any:
    """A generated file's JSON; a damaged one is a ValueError that names it."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ValueError(f"{path}: not valid JSON, damaged or half-written ({exc})") from None


def load_manifest(generated_dir: Path | str) -> Manifest:
    """Read generated/manifest.json (refusing a newer schema)."""
    path = Path(generated_dir) / MANIFEST_FILE
    data = _json_file(path)
    _check_version(data.get("schema_version"), path)
    return Manifest.model_validate(data)


@lru_cache(maxsize=64)
def _job_file(path: Path, mtime_ns: int) -> JobFile:
    data = _json_file(path)
    _check_version(data.get("schema_version"), path)
    return JobFile.model_validate(data)


def load_job_file(generated_dir: Path | str, matrix: str, scenario: str) -> JobFile:
    """One job file (cached while unchanged on disk)."""
    path = Path(generated_dir) / JOBS_DIR / matrix / f"{scenario}.json"
    return _job_file(path, path.stat().st_mtime_ns)


def load_job(generated_dir: Path | str, job: str) -> Job:
    """One trial by id; KeyError when the id names nothing that was compiled."""
    jid = parse_job_id(job)
    try:
        jf = load_job_file(generated_dir, jid.matrix, jid.scenario)
    except FileNotFoundError:
        raise KeyError(f"no job {job!r}: matrix {jid.matrix!r} has no scenario {jid.scenario!r}") from None
    for v in jf.variants:
        if v.cell == jid.cell and v.agent == jid.agent:
            if 1 <= jid.trial <= v.trials:
                return jf.job(v, jid.trial)
            raise KeyError(f"no job {job!r}: {v.trials} trial(s) compiled")
    raise KeyError(f"no job {job!r}: no such cell/agent pair in matrix {jid.matrix!r}")


def iter_jobs(
    generated_dir: Path | str,
    *,
    matrix: str | None = None,
    cells: Iterable[str] | None = None,
    agents: Iterable[str] | None = None,
    scenarios: Iterable[str] | None = None,
    trials: int | None = None,
) -> Iterator[Job]:
    """Every compiled trial, filtered; matrix None = every matrix; trials N = t01..tNN only.

    `matrix` names a matrix (both sides of a version comparison) or one side (`<matrix>@<version>`).

    Order: matrices sorted, scenarios sorted, then the matrix's expansion order, then trial.
    Raises KeyError for a matrix that was not compiled.
    """
    gen = Path(generated_dir)
    manifest = load_manifest(gen)
    chosen = sorted(k for k, e in manifest.matrices.items() if matrix is None or matrix in (k, e.matrix))
    if not chosen and matrix is not None:
        raise KeyError(
            f"unknown matrix {matrix!r}; compiled: {', '.join(sorted(manifest.matrices)) or 'none'}"
        )
    want_cells = set(cells) if cells is not None else None
    want_agents = set(agents) if agents is not None else None
    want_scen = set(scenarios) if scenarios is not None else None
    for mid in chosen:
        for sid in sorted(manifest.matrices[mid].files):
            if want_scen is not None and sid not in want_scen:
                continue
            jf = load_job_file(gen, mid, sid)
            for v in jf.variants:
                if (want_cells is not None and v.cell not in want_cells) or (
                    want_agents is not None and v.agent not in want_agents
                ):
                    continue
                for t in range(1, min(v.trials, trials if trials is not None else v.trials) + 1):
                    yield jf.job(v, t)
