"""Limits are on by default; a spec turns one off only by writing `none`."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from compiler.contract import Limits, iter_jobs
from compiler.errors import SpecErrors, render
from compiler.pipeline import compile_project

ROOT = Path(__file__).resolve().parents[2]


def _with_limits(valid_project: Path, tmp_path: Path, limits: str) -> Path:
    project = tmp_path / "project"
    shutil.copytree(valid_project, project)
    matrix = project / "specs" / "matrices" / "default.yaml"
    matrix.write_text(matrix.read_text().replace("limits: { timeout_s: 300 }", f"limits: {limits}"))
    return project


def test_a_spec_without_limits_gets_every_default(valid_project: Path, tmp_path: Path) -> None:
    compile_project(valid_project, generated=tmp_path / "gen")
    job = next(iter_jobs(tmp_path / "gen", matrix="default"))
    assert job.limits == Limits(timeout_s=300)
    assert None not in (
        job.limits.memory_mb,
        job.limits.pids,
        job.limits.file_size_mb,
        job.limits.workspace_mb,
        job.limits.outbox_mb,
        job.limits.output_bytes,
    )


RESOURCES = ("memory_mb", "pids", "file_size_mb", "workspace_mb", "outbox_mb", "output_bytes")
"""The limits on the machine's resources (the hostile-agent suite runs its attacks under them)."""


def test_a_spec_that_names_no_limit_at_all_gets_every_default(valid_project: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(valid_project, project)
    for rel, line in (
        ("specs/matrices/default.yaml", "limits: { timeout_s: 300 }\n"),
        ("specs/project.yaml", "  limits: { timeout_s: 600 }\n"),
    ):
        text = (project / rel).read_text()
        assert line in text
        (project / rel).write_text(text.replace(line, ""))
    compile_project(project, generated=tmp_path / "gen")
    assert next(iter_jobs(tmp_path / "gen", matrix="default")).limits == Limits()


def test_the_example_projects_shipped_specs_keep_every_default(tmp_path: Path) -> None:
    """specs/project.yaml names only a timeout: every job of the example gets the contract's
    resource limits, the ones the hostile-agent suite's fork bomb, disk fill and outbox flood meet."""
    compile_project(ROOT, generated=tmp_path / "gen")
    seen = {tuple(getattr(job.limits, name) for name in RESOURCES) for job in iter_jobs(tmp_path / "gen")}
    assert seen == {tuple(getattr(Limits(), name) for name in RESOURCES)}


def test_none_written_out_turns_one_limit_off_and_leaves_the_others(
    valid_project: Path, tmp_path: Path
) -> None:
    project = _with_limits(valid_project, tmp_path, "{ timeout_s: 300, pids: none, memory_mb: 512 }")
    compile_project(project, generated=tmp_path / "gen")
    job = next(iter_jobs(tmp_path / "gen", matrix="default"))
    assert job.limits.pids is None and job.limits.memory_mb == 512
    assert job.limits.workspace_mb == Limits().workspace_mb and job.limits.outbox_mb == Limits().outbox_mb


@pytest.mark.parametrize("value", ["off", "null", "~", "0x"])
def test_anything_but_a_number_or_none_is_a_positioned_error(
    valid_project: Path, tmp_path: Path, value: str
) -> None:
    project = _with_limits(valid_project, tmp_path, f"{{ timeout_s: 300, pids: {value} }}")
    if value in ("null", "~"):  # YAML null: "not set here", so the default applies
        compile_project(project, generated=tmp_path / "gen")
        assert next(iter_jobs(tmp_path / "gen", matrix="default")).limits.pids == Limits().pids
        return
    with pytest.raises(SpecErrors) as caught:
        compile_project(project, generated=tmp_path / "gen")
    shown = render(caught.value.errors)
    assert "specs/matrices/default.yaml:14:" in shown and "pids" in shown, shown
