"""Selecting jobs: from generated/ (through the compiler's public contract) or from job files.

The runner reads jobs only from `generated/` (or job files the compiler wrote); it never
looks at specs. The compiler's loaders (`load_job`, `iter_jobs`, `load_manifest`) live in
`compiler.contract`, the one module of the compiler the harness may import.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from compiler import contract
from compiler.contract import Job, RoundsPlan
from harness.errors import NothingSelected, UsageError

GENERATED = "generated"


def _loader(name: str) -> Any:
    fn = getattr(contract, name, None)
    if fn is None:
        raise UsageError(f"this build's compiler contract has no {name}(); compile first or pass --job-file")
    return fn


def from_files(paths: Sequence[Path]) -> list[Job]:
    """Jobs read from job JSON files (a folder stands for every *.json below it)."""
    jobs: list[Job] = []
    files = [f for p in paths for f in (sorted(p.rglob("*.json")) if p.is_dir() else [p])]
    for path in files:
        try:
            jobs.append(contract.read_job_file(path))
        except contract.CorruptJob as exc:
            raise UsageError(str(exc)) from None
        except OSError as exc:
            raise UsageError(f"{path}: cannot read the job file: {exc.strerror or exc}") from None
    return jobs


def select(
    project: Path,
    *,
    matrix: str | None = None,
    job_ids: Sequence[str] = (),
    cells: Sequence[str] = (),
    agents: Sequence[str] = (),
    scenarios: Sequence[str] = (),
    trials: int | None = None,
) -> list[Job]:
    """The jobs of generated/ that pass the filters (trials: keep trial numbers up to N)."""
    generated = project / GENERATED
    if not (generated / "manifest.json").is_file():
        raise UsageError(f"{generated}/manifest.json not found: run `assay compile` first")
    for jid in job_ids:
        try:
            contract.parse_job_id(jid)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    try:
        if job_ids:
            load_job = _loader("load_job")
            jobs = [load_job(generated, jid) for jid in job_ids]
        else:
            iter_jobs = _loader("iter_jobs")
            jobs = list(
                iter_jobs(
                    generated,
                    matrix=matrix,
                    cells=list(cells) or None,
                    agents=list(agents) or None,
                    scenarios=list(scenarios) or None,
                )
            )
    except KeyError as exc:  # an unknown matrix or job id: the loaders' message names what exists
        raise UsageError(str(exc.args[0]) if exc.args else "no such job") from None
    except ValueError as exc:  # a malformed id, a newer contract, a damaged manifest or job file
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise UsageError(f"{first}; `assay compile` rewrites generated/") from None
    except OSError as exc:
        raise UsageError(f"cannot read {exc.filename or generated}: {exc.strerror or exc}") from None
    if trials is not None:
        jobs = [j for j in jobs if j.trial <= trials]
    if not jobs:
        raise NothingSelected(_nothing(generated, matrix, cells=cells, agents=agents, scenarios=scenarios))
    return jobs


def _nothing(
    generated: Path,
    matrix: str | None,
    *,
    cells: Sequence[str],
    agents: Sequence[str],
    scenarios: Sequence[str],
) -> str:
    """Why a selection is empty, listing what the matrix (or every matrix) has."""
    manifest = _loader("load_manifest")(generated)
    entries = [e for k, e in manifest.matrices.items() if matrix is None or matrix in (k, e.matrix)]
    where = f"matrix '{matrix}'" if matrix else "the compiled matrices"
    have = {
        "agent": sorted({a for e in entries for a in e.agents}),
        "cell": list(dict.fromkeys(c for e in entries for c in e.cells)),
        "scenario": sorted({s for e in entries for s in e.scenarios}),
    }
    asked = {"agent": agents, "cell": cells, "scenario": scenarios}
    reasons = [
        f"--{what} {', '.join(missing)}: {where} has {what}s {', '.join(have[what]) or '(none)'}"
        for what, wanted in asked.items()
        if (missing := [w for w in wanted if w not in have[what]])
    ]
    if not reasons:
        given = " ".join(f"--{what} {w}" for what, wanted in asked.items() for w in wanted)
        reasons.append(
            f"{where} has no job that combines {given or 'these filters'}"
            + " (its exclude or include leaves that combination out)"
        )
    return "no job matches the selection: " + "; ".join(reasons)


class MatrixSettings(NamedTuple):
    """How a matrix asks to be run."""

    seed: int
    parallel: int | None
    fail_fast: bool
    rounds: RoundsPlan | None = None
    """In rounds: until decided, or within a budget (`--until`, `--budget-*` override it)."""


def matrix_settings(project: Path, matrix: str | None) -> MatrixSettings:
    """Seed, parallel, fail_fast and rounds of a matrix from the manifest (defaults when it does not say)."""
    load_manifest = getattr(contract, "load_manifest", None)
    if load_manifest is None or matrix is None or not (project / GENERATED / "manifest.json").is_file():
        return MatrixSettings(0, None, False)
    entry = load_manifest(project / GENERATED).matrices.get(matrix)
    if entry is None:
        return MatrixSettings(0, None, False)
    return MatrixSettings(int(entry.seed or 0), entry.parallel, bool(entry.fail_fast), entry.rounds)
