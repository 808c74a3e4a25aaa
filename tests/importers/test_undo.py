"""The journal that takes an unfinished import back (harness.importers.undo), on files alone: no
sandbox, no import. The imports it guards are in test_import_interrupted.py."""

from __future__ import annotations

import os
from pathlib import Path

from harness.importers.undo import Undo
from tests.helpers import assay


def _tree(root: Path) -> dict[str, bytes | None]:
    return {
        Path(top, n).relative_to(root).as_posix(): (None if n in dirs else Path(top, n).read_bytes())
        for top, dirs, files in os.walk(root)
        for n in [*dirs, *files]
    }


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    (project / "specs" / "matrices").mkdir(parents=True)
    (project / "specs" / "matrices" / "ds.yaml").write_text("earlier matrix\n")
    (project / "scenarios" / "ds-a" / "seed").mkdir(parents=True)
    (project / "scenarios" / "ds-a" / "seed" / "x.txt").write_text("earlier scenario\n")
    (project / "link").symlink_to("specs")
    return project


def _import(project: Path, undo: Undo) -> None:
    """What an import does: replace a file, a folder and a link, write into folders it makes."""
    undo.claim(project / "specs" / "matrices" / "ds.yaml").write_text("new matrix\n")
    folder = undo.claim(project / "scenarios" / "ds-a")
    (folder / "seed").mkdir(parents=True)
    (folder / "seed" / "y.txt").write_text("new scenario\n")
    undo.claim(project / "link").write_text("a file where a link was\n")
    report = undo.claim(project / "imports" / "deep" / "ds.json")
    report.parent.mkdir(parents=True)
    report.write_text("{}\n")


def test_a_rollback_puts_back_every_claimed_path_and_removes_the_folders_it_made(tmp_path: Path) -> None:
    project = _project(tmp_path)
    before = _tree(project)
    undo = Undo(project, project / ".cache" / "import" / "ds.undo")
    _import(project, undo)
    assert (project / "scenarios" / "ds-a" / "seed" / "y.txt").is_file()
    aside = project / ".cache" / "import" / "ds.undo"
    assert (aside / "scenarios" / "ds-a" / "seed" / "x.txt").read_text() == "earlier scenario\n"
    undo.rollback()
    assert _tree(project) == before
    assert os.readlink(project / "link") == "specs"
    undo.rollback()  # nothing left to do
    assert _tree(project) == before


def test_a_folder_the_import_made_stays_when_someone_else_wrote_into_it(tmp_path: Path) -> None:
    project = _project(tmp_path)
    undo = Undo(project, project / ".cache" / "import" / "ds.undo")
    _import(project, undo)
    (project / "imports" / "theirs.md").write_text("not the import's\n")
    undo.rollback()
    assert sorted(p.name for p in (project / "imports").iterdir()) == ["theirs.md"]
    assert not (project / ".cache").exists()


def test_a_commit_keeps_the_import_and_drops_what_it_replaced(tmp_path: Path) -> None:
    project = _project(tmp_path)
    undo = Undo(project, project / ".cache" / "import" / "ds.undo")
    _import(project, undo)
    undo.restore(project / "specs" / "matrices" / "ds.yaml")  # what an import that brings nothing does
    undo.commit()
    assert (project / "specs" / "matrices" / "ds.yaml").read_text() == "earlier matrix\n"
    assert sorted(p.name for p in (project / "scenarios" / "ds-a" / "seed").iterdir()) == ["y.txt"]
    assert not (project / ".cache" / "import" / "ds.undo").exists()
    undo.rollback()  # committed: nothing to take back
    assert (project / "imports" / "deep" / "ds.json").is_file()


def test_an_import_is_refused_while_an_unfinished_ones_attic_is_there(project: Path, tmp_path: Path) -> None:
    """What a killed import had moved aside is the user's: never overwritten, never deleted."""
    attic = project / ".cache" / "import" / "ds.undo"
    (attic / "scenarios" / "ds-a").mkdir(parents=True)
    (tmp_path / "ds" / "t").mkdir(parents=True)
    done = assay("--project", project, "import", "terminal-bench", tmp_path / "ds", "--name", "ds")
    assert done.returncode == 2, done.stderr
    assert ".cache/import/ds.undo/ holds what an import of ds that did not finish moved aside" in done.stderr
    assert (attic / "scenarios" / "ds-a").is_dir() and not (project / "scenarios").exists()
