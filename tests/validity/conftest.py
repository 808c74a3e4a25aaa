from __future__ import annotations

import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of the example project holding only the fast triage scenario."""
    root = tmp_path / "project"
    root.mkdir()
    for folder in ("specs", "tools", "guides", "wiki"):
        if (REPO / folder).is_dir():
            shutil.copytree(REPO / folder, root / folder)
    shutil.copytree(REPO / "scenarios" / "triage-name-error", root / "scenarios" / "triage-name-error")
    return root
