"""The pipeline's core is pure: parse -> validate -> expand from files held in memory, no disk."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler.emit import job_files, manifest
from compiler.errors import SpecErrors
from compiler.load import inputs_of
from compiler.pipeline import plan_of

FILES = {
    "specs/project.yaml": b"kind: project\nspec_version: 1\nname: mem\nlanguages: [python]\n"
    b"factors:\n  tool: { none: {}, bin: { path: [tools] } }\ncontrol: none\n",
    "specs/agent.yaml": b"kind: agent\nid: a\nadapter: noop\n",
    "specs/m.yaml": b"kind: matrix\nid: m\nagents: [a]\ntrials: 3\n",
    "scenarios/s/scenario.yaml": b"kind: scenario\nid: s\nchecks: [{ id: c, kind: file-exists, path: out.txt }]\n",
    "scenarios/s/prompt.md": b"Write out.txt.\n",
    "scenarios/s/seed/.gitkeep": b"",
    "scenarios/s/reference/out.txt": b"x\n",
}


def test_plan_from_memory() -> None:
    plan = plan_of(inputs_of(Path("/nonexistent"), dict(FILES)))
    assert list(plan.cells) == ["none", "bin"]
    assert plan.matrices["m"].jobs == 6
    files = job_files(plan)
    assert list(files) == ["jobs/m/s.json"]
    jobs = list(files["jobs/m/s.json"].jobs())
    assert [j.id for j in jobs][:2] == ["m/none/a/s/t01", "m/none/a/s/t02"]
    assert jobs[3].cell.provisions.path == ("specs/tools",)
    assert manifest(plan).default_matrix == "m"


def test_errors_from_memory() -> None:
    files = dict(FILES)
    files["specs/m.yaml"] = b"kind: matrix\nid: m\nagents: [b]\ntrials: 3\n"
    with pytest.raises(SpecErrors) as info:
        plan_of(inputs_of(Path("/nonexistent"), files))
    assert [e.text().splitlines()[0] for e in info.value.errors] == [
        "specs/m.yaml:3:10: error[E222]: agents[0]: unknown agent 'b'"
    ]
