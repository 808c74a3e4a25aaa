from __future__ import annotations

from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "specs"


@pytest.fixture
def valid_project() -> Path:
    """The small valid project under tests/fixtures/specs/valid."""
    return FIXTURES / "valid"
