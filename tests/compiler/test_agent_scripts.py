"""A scripted agent's script is checked at compile time: its YAML, its shape, its steps."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from adapters.scripted import ACTIONS as ADAPTER_ACTIONS
from compiler.errors import SpecErrors
from compiler.pipeline import build, validated
from compiler.specs.script import ACTIONS
from tests.compiler.corpus import materialise


def test_the_script_model_knows_the_adapters_actions() -> None:
    assert set(ACTIONS) == set(ADAPTER_ACTIONS)


def test_a_scenarios_broken_script_leaves_validate_to_new_scripts(tmp_path: Path) -> None:
    """`assay new scripts` rewrites a broken scenario script: it needs the validate stage to pass,
    so the script's own errors are the expand stage's (`assay compile` reports them)."""
    project = materialise("scenario-scripts-wrong", tmp_path / "p")
    assert "greet" in validated(project).scenarios
    with pytest.raises(SpecErrors) as info:
        build(project)
    assert {e.file for e in info.value.errors} == {
        f"scenarios/greet/scripted/{name}.yaml" for name in ("broken", "double", "lazy", "weak")
    }


def test_every_shipped_script_is_valid() -> None:
    root = Path(__file__).resolve().parents[2]
    plan = build(root)  # raises SpecErrors when a scenario's script is not
    assert all(not s.problems for s in plan.validated.scripts.values())


def test_an_explicit_empty_list_is_steps_on_purpose(valid_project: Path, tmp_path: Path) -> None:
    """As the runner reads a script: `steps: []` is written on purpose; no `steps:` at all is none."""
    project = tmp_path / "p"
    shutil.copytree(valid_project, project)
    assert (project / "agents/good.yaml").read_text() == "steps: []\n"
    build(project)
    (project / "agents/good.yaml").write_text("seed: 1\n")
    with pytest.raises(SpecErrors) as info:
        build(project)
    assert {e.code for e in info.value.errors} == {"E237"}
