"""The example tool's launcher: it runs the real ruff and keeps ruff's cache out of the workspace."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

LAUNCHER = Path(__file__).resolve().parents[2] / "tools" / "bin" / "ruff"


@pytest.mark.skipif(
    shutil.which("ruff", path=str(Path(sys.executable).parent)) is None,
    reason="ruff is not installed beside this interpreter",
)
def test_cache_goes_to_home_not_the_workspace(tmp_path: Path) -> None:
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    (work / "a.py").write_text("import os\n")
    env = {"PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}", "HOME": str(home)}
    done = subprocess.run(
        ["sh", str(LAUNCHER), "check", "a.py"], cwd=work, env=env, capture_output=True, text=True
    )
    assert done.returncode == 1, done.stderr  # ruff ran and found the unused import
    assert "F401" in done.stdout
    assert sorted(p.name for p in work.iterdir()) == ["a.py"]  # no .ruff_cache: it would be an unsafe edit
    assert (home / ".cache" / "ruff").is_dir()
