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
    """...holding only the fast triage scenario."""
    return (*EXAMPLE_PARTS, "scenarios/triage-name-error")
