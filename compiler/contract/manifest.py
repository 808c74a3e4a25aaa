"""`generated/manifest.json` and the job files: their shapes, and the helpers that read them and find
one trial's job by id."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field

from compiler.contract.base import SCHEMA_VERSION, Frozen, OmitUnset
from compiler.contract.job import Job, Limits, Options, job_id, parse_job_id
from compiler.contract.parts import AgentSpec, Cell
from compiler.contract.scenario import ScenarioJob

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
    if isinstance(found, bool) or not isinstance(found, int):
        raise ValueError(
            f"{what}: no valid schema_version ({found!r}): damaged, or not written by `assay compile`; recompile"
        )
    if found > SCHEMA_VERSION:
        raise ValueError(
            f"{what}: schema_version {found!r} is newer than this assay understands ({SCHEMA_VERSION}); "
            "upgrade assay or recompile with this version"
        )


def _json_file(path: Path) -> Any:
    """A generated file's JSON; a damaged one is a ValueError that names it."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ValueError(f"{path}: not valid JSON, damaged or half-written ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError(
            f"{path}: not a JSON object ({type(data).__name__}): damaged; run `assay compile` again"
        )
    return data


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
