"""Fixtures shared by every test package.

`project` is a private copy (in tmp_path) of the folder `project_source` names: by default
the runner's small fixture project. A package whose tests need another project overrides
`project_source` in its conftest (and `project_parts` to copy only some of it); a test module
that adds files to the copy overrides `project` by asking for it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.helpers import FIXTURE

collect_ignore = ["fixtures"]  # projects and scenarios, their own tests included: data, never collected


@pytest.fixture
def project_source() -> Path:
    """The folder `project` copies."""
    return FIXTURE


@pytest.fixture
def project_parts() -> tuple[str, ...]:
    """The paths under `project_source` that `project` copies (those that exist); () copies it all."""
    return ()


@pytest.fixture
def project(tmp_path: Path, project_source: Path, project_parts: tuple[str, ...]) -> Path:
    """A private copy of the project, symlinks kept as links."""
    dest = tmp_path / "project"
    if not project_parts:
        shutil.copytree(project_source, dest, symlinks=True)
        return dest
    dest.mkdir()
    for rel in project_parts:
        if (project_source / rel).exists():
            shutil.copytree(project_source / rel, dest / rel, symlinks=True)
    return dest
