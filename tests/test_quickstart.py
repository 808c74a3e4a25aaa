"""The README's quickstart leaves `assay` usable: its first line installs the project into .venv,
and `.venv/bin/assay --help` then works as the README says (the slow test does it on a fresh copy)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _first_line() -> str:
    block = README.split("## Quickstart", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    return block.splitlines()[0].split("#", 1)[0].strip()


def test_the_first_line_installs_assay_and_the_readme_says_how_to_call_it() -> None:
    line = _first_line()
    assert re.search(
        r"\.venv/bin/(uv )?pip install (-q )?(-p \.venv/bin/python )?-e (\.|'\.\[example\]') ", line
    ), line
    assert line.endswith(".venv/bin/nox -s demo"), line
    assert "`.venv/bin/assay --help`" in README
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'assay = "harness.cli:main"' in pyproject and re.search(r'"nox(\[uv\])?>=', pyproject)


@pytest.mark.slow
def test_after_the_first_line_assay_help_works_on_a_fresh_copy(tmp_path: Path) -> None:
    """Everything the first line does but the demo itself (minutes; CI runs it as `nox -s demo`)."""
    if shutil.which("git") is None:
        pytest.skip("git is needed to list the checkout's files")
    files = (
        subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
        .stdout.decode()
        .split("\0")
    )
    clone = tmp_path / "clone"
    for rel in filter(None, files):
        if (ROOT / rel).is_file():
            (clone / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, clone / rel)
    install = _first_line().rsplit("&&", 1)[0].replace("python3 ", f"{sys.executable} ", 1)
    done = subprocess.run(install, shell=True, cwd=clone, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    helped = subprocess.run(
        [str(clone / ".venv" / "bin" / "assay"), "--help"], cwd=clone, capture_output=True, text=True
    )
    assert helped.returncode == 0, helped.stderr
    assert helped.stdout.startswith("usage: assay") and "compile" in helped.stdout
    listed = subprocess.run(
        [str(clone / ".venv" / "bin" / "nox"), "-l"], cwd=clone, capture_output=True, text=True, timeout=300
    )
    assert listed.returncode == 0 and "demo" in listed.stdout, listed.stderr
