"""A path a spec names stays inside the project, through links too (E211); a seed's link is copied
as a link, so it may lead anywhere (and what it leads to is never read)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from compiler.errors import SpecErrors
from compiler.pipeline import build, compile_project


@pytest.fixture
def project(valid_project: Path, tmp_path: Path) -> Path:
    proj = tmp_path / "p"
    shutil.copytree(valid_project, proj)
    (tmp_path / "outside.txt").write_text("a secret from outside the project\n")
    return proj


def _errors(project: Path) -> list[str]:
    with pytest.raises(SpecErrors) as info:
        build(project)
    return [e.text().splitlines()[0] for e in info.value.errors]


def _link_out(path: Path, target: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)
    path.symlink_to(target)


def test_a_prompt_linked_out_of_the_project(project: Path, tmp_path: Path) -> None:
    _link_out(project / "scenarios/fix-unused-import/prompt.md", tmp_path / "outside.txt")
    [line] = _errors(project)
    assert line.startswith("scenarios/fix-unused-import/scenario.yaml:")
    assert f"error[E211]: prompt: 'scenarios/fix-unused-import/prompt.md' is a link to {tmp_path}" in line


def test_a_provided_folder_linked_out_of_the_project(project: Path, tmp_path: Path) -> None:
    shutil.copytree(project / "specs/guides/ruff", tmp_path / "guide")
    _link_out(project / "specs/guides/ruff", tmp_path / "guide")
    assert _errors(project) == [
        "specs/project.yaml:19:18: error[E211]: factors.tool.bin+skill.skill_dir: 'specs/guides/ruff' "
        f"is a link to {tmp_path}/guide, outside the project"
    ]


def test_a_scenario_folder_linked_in_from_outside(project: Path, tmp_path: Path) -> None:
    shutil.copytree(project / "scenarios/sum-answer", tmp_path / "elsewhere")
    _link_out(project / "scenarios/sum-answer", tmp_path / "elsewhere")
    assert _errors(project) == [
        "scenarios/sum-answer:1:1: error[E211]: (document): 'scenarios/sum-answer' is a link to "
        f"{tmp_path}/elsewhere, outside the project"
    ]


def test_an_agent_script_linked_out_of_the_project(project: Path, tmp_path: Path) -> None:
    (tmp_path / "script.yaml").write_text("steps: []\n")
    _link_out(project / "agents/good.yaml", tmp_path / "script.yaml")
    [line] = _errors(project)
    assert "error[E211]: args.script: 'agents/good.yaml' is a link to" in line


def test_a_seed_may_hold_a_link_out_and_it_is_never_read(project: Path, tmp_path: Path) -> None:
    (project / "scenarios/sum-answer/seed/leak.txt").symlink_to(tmp_path / "outside.txt")
    gen = tmp_path / "gen"
    compile_project(project, generated=gen)
    assert b"a secret" not in b"".join(p.read_bytes() for p in gen.rglob("*.json"))
    (tmp_path / "outside.txt").write_text("changed\n")  # not an input: the link is
    assert compile_project(project, generated=gen).up_to_date


def test_a_matrix_option_folder_linked_out_of_the_project(project: Path, tmp_path: Path) -> None:
    (tmp_path / "wiki").mkdir()
    (project / "specs/wiki").symlink_to(tmp_path / "wiki")
    matrix = project / "specs/matrices/default.yaml"
    matrix.write_text(matrix.read_text() + "options: { wiki_dir: ../wiki }\n")
    [line] = _errors(project)
    assert line.startswith("specs/matrices/default.yaml:15:")
    assert f"error[E211]: options.wiki_dir: 'specs/wiki' is a link to {tmp_path}/wiki" in line
