"""`assay new scenario` scaffolds a scenario that compiles and passes validate as written."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from compiler.pipeline import build
from tests.helpers import assay

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    for folder in ("specs", "tools", "agents", "guides", "wiki"):
        if (REPO / folder).is_dir():
            shutil.copytree(REPO / folder, root / folder)
    return root


def test_scaffold_compiles_and_validates(project: Path) -> None:
    made = assay(
        "--project", project, "new", "scenario", "greet-user", "--split", "test", "--family", "greetings"
    )
    assert made.returncode == 0, made.stderr
    folder = project / "scenarios" / "greet-user"
    assert "scenario.yaml" in made.stdout and (folder / "seed" / "app" / "greet.py").is_file()
    text = (folder / "scenario.yaml").read_text()
    assert text.startswith("# yaml-language-server: $schema=../../generated/schema/scenario.json")
    assert "TODO" in text and "{{" not in text

    plan = build(project)
    job = plan.validated.scenarios["greet-user"].job
    assert (job.family, job.split, job.language) == ("greetings", "test", "python")
    assert {n.name for n in job.negatives} == {"wrong-greeting", "renamed", "edits-tests"}

    valid = assay("--project", project, "validate", "--strict", "--scenario", "greet-user")
    assert valid.returncode == 0, valid.stdout + valid.stderr
    assert ": valid; 0 uncovered" in valid.stdout


def test_refuses_an_existing_folder_and_a_bad_id(project: Path) -> None:
    assert assay("--project", project, "new", "scenario", "twice").returncode == 0
    again = assay("--project", project, "new", "scenario", "twice")
    assert again.returncode == 2 and "already exists" in again.stderr
    bad = assay("--project", project, "new", "scenario", "Not A Slug")
    assert bad.returncode == 2 and "not a slug" in bad.stderr
