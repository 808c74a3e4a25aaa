"""Fixtures of the import tests: a project to import into, the fixture datasets, a prebuilt environment.

Building a scenario environment installs packages from the package index once; the tests stay
offline by building the environment the fixture tasks need ahead of time (a venv of this
interpreter that sees the test run's own pytest), exactly where `assay` looks for it.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from import_util import VERSION

from tests.helpers import ROOT
from tests.mounting import root_mounts

__all__ = ["root_mounts"]

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "import"


@pytest.fixture
def project_source() -> Path:
    """A project to import into: the seed 000 fixture's project spec..."""
    return ROOT / "tests" / "fixtures" / "seed000"


@pytest.fixture
def project_parts() -> tuple[str, ...]:
    return ("specs/project.yaml",)


@pytest.fixture
def project_files() -> dict[str, str]:
    """...and a matrix of its own."""
    return {
        "specs/matrices/mine.yaml": (
            "kind: matrix\nid: mine\ndefault: true\nagents: [noop]\nscenarios: { tags: [mine] }\n"
        ),
        "specs/noop.yaml": "kind: agent\nid: noop\nadapter: noop\n",
    }


@pytest.fixture
def dataset(tmp_path: Path) -> Callable[[str], Path]:
    """A copy of a fixture dataset whose images name this interpreter's version."""

    def copy(fmt: str) -> Path:
        dest = tmp_path / "datasets" / fmt
        shutil.copytree(FIXTURES / fmt, dest)
        for docker in dest.rglob("Dockerfile"):
            docker.write_text(
                docker.read_text().replace("python:3.11", f"python:{VERSION}"), encoding="utf-8"
            )
        return dest

    return copy
