"""Fixtures shared by every test package.

`project` is a private copy (in tmp_path) of the folder `project_source` names: by default
the runner's small fixture project. A package or module whose tests need another project
overrides `project_source`, `project_parts` to copy only some of it, and `project_files` to
write files of its own into the copy.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import FIXTURE, end_started


@pytest.fixture(autouse=True)
def _end_started() -> Iterator[None]:
    """Children a test registered with `tests.helpers.started` end with the test, pass or fail."""
    yield
    end_started()


@pytest.fixture
def project_source() -> Path:
    """The folder `project` copies."""
    return FIXTURE


@pytest.fixture
def project_parts() -> tuple[str, ...]:
    """The files and folders under `project_source` that `project` copies (those that exist); () copies it all."""
    return ()


@pytest.fixture
def project_files() -> dict[str, str]:
    """Files `project` writes into the copy: relative path -> text."""
    return {}


@pytest.fixture
def project(
    tmp_path: Path, project_source: Path, project_parts: tuple[str, ...], project_files: dict[str, str]
) -> Path:
    """A private copy of the project, symlinks kept as links."""
    dest = tmp_path / "project"
    if not project_parts:
        shutil.copytree(project_source, dest, symlinks=True)
    dest.mkdir(exist_ok=True)
    for rel in project_parts:
        source = project_source / rel
        if source.is_dir():
            shutil.copytree(source, dest / rel, symlinks=True)
        elif source.exists():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / rel, follow_symlinks=False)
    for rel, text in project_files.items():
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        (dest / rel).write_text(text, encoding="utf-8")
    return dest
