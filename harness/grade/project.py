"""What the grader takes from the project: current checks, the seed, the hidden grader files.

A run's job.json freezes the checks it was run with; grading after a check changed must
use the changed one, so with a project the grader takes the scenario as currently
compiled in `generated/` (manifest + job files). Without a project, or before anything
is compiled, it grades by the run's own job.json.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from functools import cache, partial
from pathlib import Path, PurePosixPath
from typing import TypeVar

from pydantic import ValidationError

from compiler.contract import (
    JOBS_DIR,
    MANIFEST_FILE,
    Job,
    Manifest,
    ScenarioJob,
    load_job_file,
    load_manifest,
)

GENERATED = Path("generated")
_CODE = ("harness/grade", "harness/checks", "harness/artifacts")
T = TypeVar("T")


class UnknownScenario(Exception):
    """The project's compiled manifest does not know the run's scenario."""


class DamagedCompile(ValueError):
    """A file of generated/ cannot be read (damaged, half-written, of a newer assay): `assay compile`
    rewrites it. The message names the file."""


def _compiled(path: Path, load: Callable[[], T]) -> T:
    """What load reads from generated/ (path), its failure a DamagedCompile that names the file."""
    try:
        return load()
    except ValidationError as exc:  # the contract's models do not know the file they validate
        raise DamagedCompile(f"{path}: not a file `assay compile` wrote ({_first(exc)})") from None
    except ValueError as exc:  # the contract's loaders name the file
        raise DamagedCompile(_first(exc)) from None


def _first(exc: Exception) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def as_project(path: Path | None) -> Path | None:
    """The path when it is a project root (specs/, scenarios/ or generated/), else None.

    Callers sometimes pass a runs root; grading it as a project would find no hidden
    files and call every run ungradeable, so it is treated as "no project".
    """
    if path is None:
        return None
    # Absolute: folders under it are bound into check sandboxes, which run elsewhere.
    return path.resolve() if any((path / d).is_dir() for d in ("specs", "scenarios", "generated")) else None


def current_scenario(project: Path | None, job: Job) -> ScenarioJob:
    """The scenario to grade by: the project's current compile, else the run's own job.json.

    The run's own matrix is preferred; a scenario compiled only under another matrix is
    the same scenario (checks are per scenario). Nothing compiled: the run's job stands.

    Raises:
        UnknownScenario: the compiled manifest does not know the run's scenario.
        DamagedCompile: the manifest or the scenario's job file cannot be read.
    """
    if project is None or not (project / GENERATED / MANIFEST_FILE).is_file():
        return job.scenario
    gen = project / GENERATED
    manifest = _compiled_manifest(gen)
    sid = job.scenario.id
    if sid not in manifest.scenarios:
        raise UnknownScenario(f"scenario {sid!r} is not in the project's compiled manifest")
    matrices = [job.matrix] if job.matrix in manifest.matrices else []
    matrices += sorted(m for m in manifest.matrices if m != job.matrix)
    for mid in matrices:
        if sid in manifest.matrices[mid].files:
            path = gen / JOBS_DIR / mid / f"{sid}.json"
            return _compiled(path, partial(load_job_file, gen, mid, sid)).scenario
    return job.scenario


def stale_inputs(project: Path | None) -> list[str]:
    """Inputs of the compiled manifest that changed or vanished since it was compiled.

    Grading by a stale compile would regrade with the old checks; the CLI refuses instead.

    Raises:
        DamagedCompile: the manifest cannot be read.
    """
    if project is None or not (project / GENERATED / MANIFEST_FILE).is_file():
        return []
    gen = project / GENERATED
    manifest = _compiled_manifest(gen)
    changed = []
    for rel, digest in sorted(manifest.inputs.items()):
        path = project / rel
        if not path.is_file() or hashlib.sha256(path.read_bytes()).hexdigest() != digest:
            changed.append(rel)
    return changed


def _compiled_manifest(gen: Path) -> Manifest:
    path = gen / MANIFEST_FILE
    return _compiled(path, lambda: _manifest(gen.resolve(), path.stat().st_mtime_ns))


@cache
def _manifest(gen: Path, mtime_ns: int) -> Manifest:
    return load_manifest(gen)


def project_dir(project: Path | None, relative: str | None) -> Path | None:
    """A project-relative folder, or None."""
    if project is None or relative is None:
        return None
    return project.joinpath(*PurePosixPath(relative).parts)


@cache
def code_version() -> str:
    """A hash of the grader's own code: any change to it means every grade is stale."""
    here = Path(__file__).resolve().parents[2]
    digest = hashlib.sha256()
    files = [p for d in _CODE for p in (here / d).rglob("*.py")]
    for path in sorted(files):
        if path.is_file():
            digest.update(path.relative_to(here).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def grader_hash(
    scenario: ScenarioJob,
    grader_files: Path | None,
    expectations: list[dict[str, object]],
    project: Path | None = None,
) -> str:
    """grader code version + the scenario's checks and expectations + the grader files (and the
    files of its hidden mounts, a suite's tests, when the project is known)."""
    digest = hashlib.sha256(code_version().encode())
    digest.update(json.dumps([c.model_dump(mode="json") for c in scenario.checks], sort_keys=True).encode())
    digest.update(json.dumps(expectations, sort_keys=True, default=str).encode())
    digest.update(json.dumps(list(scenario.notable_exits)).encode())
    hidden = [project_dir(project, m.source) for m in scenario.mounts if m.hidden]
    for folder in [grader_files, *hidden]:
        if folder is not None and folder.is_dir():
            for path in sorted(p for p in folder.rglob("*") if p.is_file()):
                digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes())
    return "g1-" + digest.hexdigest()[:24]
