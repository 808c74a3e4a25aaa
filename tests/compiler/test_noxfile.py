"""The noxfile lists a bench-<cell> session per cell of the default matrix, compiling on demand."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytest.importorskip("nox", reason="nox is not installed")


def _project(valid_project: Path, tmp_path: Path) -> Path:
    proj = tmp_path / "p"
    shutil.copytree(valid_project, proj)
    shutil.copy(ROOT / "noxfile.py", proj / "noxfile.py")
    shutil.copytree(ROOT / "noxsupport", proj / "noxsupport")  # noxenv finds the project beside itself
    for pkg in ("compiler", "harness", "adapters"):
        (proj / pkg).symlink_to(ROOT / pkg)
    return proj


def _list(proj: Path) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-m", "nox", "-l"], cwd=proj, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return [line.split()[1] for line in done.stdout.splitlines() if line[:2] in ("* ", "- ")]


@pytest.mark.slow
def test_lists_bench_sessions_and_recompiles_when_stale(valid_project: Path, tmp_path: Path) -> None:
    proj = _project(valid_project, tmp_path)
    assert not (proj / "generated/manifest.json").exists()
    names = _list(proj)
    assert (proj / "generated/manifest.json").exists()
    for name in (
        "compile",
        "validate",
        "tests",
        "lint",
        "schema-drift",
        "bench",
        "perf-compile",
        "bench-none-none-off",
        "bench-bin-none-off",
        "bench-bin-skill-none-off",
    ):
        assert name in names
    manifest = proj / "generated/manifest.json"
    past = time.time() - 60  # the edit below is then newer whatever the filesystem's mtime granularity
    os.utime(manifest, (past, past))
    matrix = proj / "specs/matrices/default.yaml"
    matrix.write_text(matrix.read_text().replace("factors:\n  tool: [none, bin]", "factors:\n  tool: [none]"))
    names = _list(proj)
    assert "bench-bin-none-off" not in names and "bench-none-none-off" in names


def test_bench_prefix_names_cells_only() -> None:
    """Fixed sessions never start with `bench-`: a cell session can never replace one."""
    fixed = re.findall(r'@nox\.session\(name="([^"]+)"', (ROOT / "noxfile.py").read_text(encoding="utf-8"))
    assert "perf-compile" in fixed
    assert [name for name in fixed if name.startswith("bench-")] == []
