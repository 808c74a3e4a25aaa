from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import EXAMPLE_PARTS, ROOT


@pytest.fixture
def project_source() -> Path:
    """The `project` fixture copies this repository's example project..."""
    return ROOT


@pytest.fixture
def project_parts() -> tuple[str, ...]:
    """...holding only the fast triage scenario, and no demo-versions matrix: it selects the memory
    scenarios alone, and a matrix that selects no trial is a spec error (E283)."""
    specs = sorted(
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "specs").rglob("*")
        if p.is_file() and p.name != "demo-versions.yaml"
    )
    return (*specs, *(p for p in EXAMPLE_PARTS if p != "specs"), "scenarios/triage-name-error")
