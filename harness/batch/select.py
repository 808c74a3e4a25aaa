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
from compiler.contract import Job
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
            jobs.append(Job.model_validate_json(path.read_text(encoding="utf-8")))
        except (OSError, ValueError) as exc:
            raise UsageError(f"{path}: not a job file: {exc}") from exc
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
    if trials is not None:
        jobs = [j for j in jobs if j.trial <= trials]
    if not jobs:
        raise NothingSelected("no job matches the selection")
    return jobs


class MatrixSettings(NamedTuple):
    """How a matrix asks to be run."""

    seed: int
    parallel: int | None
    fail_fast: bool


def matrix_settings(project: Path, matrix: str | None) -> MatrixSettings:
    """Seed, parallel and fail_fast of a matrix from the manifest (defaults when it does not say)."""
    load_manifest = getattr(contract, "load_manifest", None)
    if load_manifest is None or matrix is None or not (project / GENERATED / "manifest.json").is_file():
        return MatrixSettings(0, None, False)
    entry = load_manifest(project / GENERATED).matrices.get(matrix)
    if entry is None:
        return MatrixSettings(0, None, False)
    return MatrixSettings(int(entry.seed or 0), entry.parallel, bool(entry.fail_fast))
