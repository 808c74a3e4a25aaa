"""Provenance (`assay explain`) and the inheritance order of resolved values."""

from __future__ import annotations

import shutil
from pathlib import Path

from compiler.explain import explain
from compiler.pipeline import build
from tests.helpers import assay

ROOT = Path(__file__).resolve().parents[2]
JOB = "default/bin+skill/none/off/scripted-good/fix-unused-import/t01"


def _lines(project: Path, job: str) -> dict[str, tuple[str, str]]:
    return {line.path: (line.value, line.source) for line in explain(build(project), job)}


def test_every_field_has_a_source(valid_project: Path) -> None:
    lines = _lines(valid_project, JOB)
    assert lines["limits.timeout_s"] == (
        "300.0",
        "specs/matrices/default.yaml:14:22",
    )  # matrix beats project defaults
    assert lines["options.env_pass"] == ('["LANG"]', "specs/project.yaml:32:42")  # project defaults
    assert lines["options.isolation"] == ('"auto"', "built-in default")
    assert lines["cell.provisions.path"][1] == "specs/project.yaml:14:13 (via bin+skill extends bin)"
    assert lines["cell.provisions.skill_dir"] == ('"specs/guides/ruff"', "specs/project.yaml:19:18")
    assert lines["scenario.checks[1].params.run"][1] == "specs/checks/lint.yaml:8:6"
    assert (
        lines["scenario.checks[1].params.with.code"][1] == "scenarios/fix-unused-import/scenario.yaml:11:49"
    )
    assert lines["scenario.checks[1].params.with.max"][1] == "specs/checks/lint.yaml:6:34"
    assert lines["scenario.prompt"][1] == "scenarios/fix-unused-import/prompt.md:1:1"
    assert all(src for _, src in lines.values())


def test_agent_extends_keeps_positions(valid_project: Path) -> None:
    lines = _lines(valid_project, "default/none/none/off/scripted-weak/sum-answer/t01")
    assert lines["agent.adapter"] == ('"scripted"', "specs/agents/scripted-good.yaml:3:10")  # inherited
    assert lines["agent.args.script"] == ('"agents/weak.yaml"', "specs/agents/scripted-weak.yaml:4:17")  # own
    assert lines["scenario.reference_note"] == (
        '"computed by hand"',
        "scenarios/sum-answer/scenario.json:10:20",
    )


def test_null_deletes_and_lists_replace(valid_project: Path, tmp_path: Path) -> None:
    proj = tmp_path / "p"
    shutil.copytree(valid_project, proj)
    (proj / "specs/agents/scripted-weak.yaml").write_text(
        "kind: agent\nid: scripted-weak\nextends: scripted-good\nargs: { seed: null }\nrequires: [git]\n"
    )
    (proj / "specs/agents/scripted-good.yaml").write_text(
        "kind: agent\nid: scripted-good\nadapter: scripted\nargs: { script: agents/good.yaml, seed: 3 }\n"
        "requires: [bash, make]\n"
    )
    plan = build(proj)
    weak = plan.validated.agents["scripted-weak"]
    assert weak.args == {"script": "agents/good.yaml"}  # the inherited map merged, its `seed` deleted
    assert weak.requires == ("git",) and weak.adapter == "scripted"


def test_cli_explain(valid_project: Path) -> None:
    done = assay("--project", valid_project, "explain", JOB)
    assert done.returncode == 0, done.stderr
    assert "limits.timeout_s" in done.stdout and "specs/matrices/default.yaml:14:22" in done.stdout
    missing = assay(
        "--project", valid_project, "explain", "default/bin/none/off/scripted-weak/sum-answer/t01"
    )
    assert missing.returncode == 2 and "no job" in missing.stderr


def test_scenario_extends_inherits_checks_and_prompt(valid_project: Path, tmp_path: Path) -> None:
    proj = tmp_path / "p"
    shutil.copytree(valid_project, proj)
    child = proj / "scenarios/fix-unused-import-2"
    shutil.copytree(proj / "scenarios/fix-unused-import/seed", child / "seed")
    shutil.copytree(proj / "scenarios/fix-unused-import/reference", child / "reference")
    shutil.copytree(proj / "scenarios/fix-unused-import/negatives", child / "negatives")
    (proj / "scenarios/fix-unused-import/scenario.yaml").write_text(
        (proj / "scenarios/fix-unused-import/scenario.yaml")
        .read_text()
        .replace("family: lint", "family: lint\nprompt: prompt.md")
    )
    (child / "scenario.yaml").write_text(
        "kind: scenario\nid: fix-unused-import-2\nextends: fix-unused-import\nsplit: test\nwritable: null\n"
    )
    plan = build(proj)
    parent = plan.validated.scenarios["fix-unused-import"].job
    job = plan.validated.scenarios["fix-unused-import-2"].job
    assert [c.id for c in job.checks] == [c.id for c in parent.checks]
    assert (
        job.prompt == parent.prompt
    )  # the parent's prompt.md: paths are relative to the file that names them
    assert job.seed == "scenarios/fix-unused-import-2/seed" and job.writable == ("**",)
    lines = {
        line.path: line.source
        for line in explain(plan, "default/none/none/off/scripted-good/fix-unused-import-2/t01")
    }
    assert lines["scenario.family"] == "scenarios/fix-unused-import/scenario.yaml:4:9"
    assert lines["scenario.split"] == "scenarios/fix-unused-import-2/scenario.yaml:4:8"
