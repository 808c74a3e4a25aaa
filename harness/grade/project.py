"""What the grader takes from the project: current checks, the seed, the hidden grader files.

A run's job.json freezes the checks it was run with; grading after a check changed must
use the changed one, so with a project the grader takes the scenario as currently
compiled in `generated/jobs/` (any job of that scenario: checks are per scenario). Without
a project, or before anything is compiled, it grades by the run's own job.json.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path, PurePosixPath

from pydantic import ValidationError

from compiler.contract import Job, ScenarioJob

GENERATED_JOBS = Path("generated") / "jobs"
_CODE = ("harness/grade", "harness/checks")
_CODE_FILES = ("harness/gradeschema.py", "harness/rundir.py", "harness/records.py")


class UnknownScenario(Exception):
    """The project's compiled jobs do not know the run's scenario."""


@dataclass(frozen=True)
class Compiled:
    """Scenarios as currently compiled, by id (empty when nothing is compiled)."""

    scenarios: dict[str, ScenarioJob]
    compiled: bool


def _stamp(root: Path) -> tuple[float, int]:
    files = list(root.rglob("*.json")) if root.is_dir() else []
    return (max((f.stat().st_mtime for f in files), default=0.0), len(files))


def compiled(project: Path) -> Compiled:
    """Every scenario of the project's compiled jobs (re-read when generated/ changes)."""
    root = project / GENERATED_JOBS
    return _compiled(root.resolve(), _stamp(root))


@cache
def _compiled(root: Path, stamp: tuple[float, int]) -> Compiled:
    found: dict[str, ScenarioJob] = {}
    if not root.is_dir():
        return Compiled({}, False)
    for path in sorted(root.rglob("*.json")):
        try:
            job = Job.model_validate_json(path.read_text(encoding="utf-8"))
        except (ValidationError, OSError, ValueError):
            continue  # hash files and foreign JSON sit beside the jobs
        found.setdefault(job.scenario.id, job.scenario)
    return Compiled(found, bool(found))


def as_project(path: Path | None) -> Path | None:
    """The path when it is a project root (specs/, scenarios/ or generated/), else None.

    Callers sometimes pass a runs root; grading it as a project would find no hidden
    files and call every run ungradeable, so it is treated as "no project".
    """
    if path is None:
        return None
    return path if any((path / d).is_dir() for d in ("specs", "scenarios", "generated")) else None


def current_scenario(project: Path | None, job: Job) -> ScenarioJob:
    """The scenario to grade by: the project's current compile, else the run's own."""
    if project is None:
        return job.scenario
    state = compiled(project)
    if not state.compiled:
        return job.scenario
    if job.scenario.id not in state.scenarios:
        raise UnknownScenario(f"scenario {job.scenario.id!r} is not in the project's compiled jobs")
    return state.scenarios[job.scenario.id]


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
    files = [p for d in _CODE for p in (here / d).rglob("*.py")] + [here / f for f in _CODE_FILES]
    for path in sorted(files):
        if path.is_file():
            digest.update(path.relative_to(here).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def grader_hash(
    scenario: ScenarioJob, grader_files: Path | None, expectations: list[dict[str, object]]
) -> str:
    """grader code version + the scenario's checks and expectations + the grader files."""
    digest = hashlib.sha256(code_version().encode())
    digest.update(json.dumps([c.model_dump(mode="json") for c in scenario.checks], sort_keys=True).encode())
    digest.update(json.dumps(expectations, sort_keys=True, default=str).encode())
    digest.update(json.dumps(list(scenario.notable_exits)).encode())
    if grader_files is not None and grader_files.is_dir():
        for path in sorted(p for p in grader_files.rglob("*") if p.is_file()):
            digest.update(path.relative_to(grader_files).as_posix().encode() + b"\0" + path.read_bytes())
    return "g1-" + digest.hexdigest()[:24]
