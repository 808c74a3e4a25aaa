"""`assay import` end to end on the fixture datasets: scenarios that validate, an oracle that
passes, a no-op that fails, grade.json listing the pytest tests one by one, refusals with reasons.

The tasks were written for these tests in the two formats (tests/fixtures/import/); the public
dataset runs are in `nox -s import-datasets`.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from import_util import VERSION, prebuild, require_sandbox

from compiler.contract import Environment
from tests.helpers import ROOT, assay

pytestmark = [pytest.mark.isolation, pytest.mark.slow]


def _grades(project: Path, matrix: str, scenario: str) -> dict[str, dict]:
    """agent -> the grade of its trial of the scenario."""
    out = {}
    for path in sorted((project / "runs" / matrix).rglob("grade.json")):
        run = json.loads((path.parent / "run.json").read_text())
        if run["scenario"] == scenario:
            out[run["agent"]] = json.loads(path.read_text())
    return out


def _commit(folder: Path) -> str:
    """Make the dataset folder a git checkout of one commit; return its hash."""
    git = ["git", "-C", str(folder), "-c", "user.name=t", "-c", "user.email=t@t.invalid"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "dataset"]):
        subprocess.run([*git, *args], check=True, capture_output=True, timeout=60)
    done = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True, timeout=60)
    return done.stdout.strip()


def _negative(folder: Path, name: str, rel: str, text: str, test: str) -> None:
    """Give an imported scenario one negative (an overlay of `rel`) naming one test of its pytest check."""
    overlay = folder / "negatives" / name / rel
    overlay.parent.mkdir(parents=True, exist_ok=True)
    overlay.write_text(text, encoding="utf-8")
    spec = folder / "scenario.yaml"
    kept = spec.read_text(encoding="utf-8").split("\nnegatives:")[0].rstrip("\n")
    spec.write_text(
        f"{kept}\nnegatives:\n  {name}: {{ fails: ['tests::test_outputs.py::{test}'] }}\n", encoding="utf-8"
    )


def test_terminal_bench_dataset(project: Path, dataset: Callable[[str], Path]) -> None:
    require_sandbox()
    prebuild(project, Environment(python=VERSION, pip=("pytest",)))
    prebuild(project, Environment(python=VERSION, pip=("pytest",), apt=("coreutils",)))
    mine = (project / "specs" / "matrices" / "mine.yaml").read_bytes()
    source = dataset("terminal-bench")
    commit = _commit(source)
    done = assay("--project", project, "import", "terminal-bench", source, "--name", "tb")
    assert done.returncode == 0, done.stderr
    report = json.loads((project / "imports" / "tb.json").read_text())
    # The dataset's provenance: all of its commit, where in the repository, no hand edits.
    assert (report["commit"], report["repo_path"], report["local_changes"]) == (commit, "", [])
    assert f"at {commit}" in (project / "scenarios" / "tb-csv-summary" / "scenario.yaml").read_text()
    assert report["imported"] == [
        "tb-csv-summary",
        "tb-fills-gaps",
        "tb-generates-data",
        "tb-regenerates-data",
    ]
    assert {k: v["reasons"][0] for k, v in report["refused"].items()} == {
        "tb-leaves-server": "the tests talk to a server the solution leaves running (cd /app/site && nohup"
        " python3 -m http.server 8765 > /dev/null 2>&1 &): a check sees the files the agent left, not"
        " the processes it started",
        "tb-needs-server": "extra compose services (client, server): the task needs more than one container",
        "tb-no-solution": "no solution.sh: the reference cannot be made",
    }
    folder = project / "scenarios" / "tb-csv-summary"
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()) == [
        "mounts/data/sales.csv",
        "prompt.md",
        "reference/out/greeting.txt",
        "reference/out/summary.txt",
        "scenario.yaml",
        "seed/out/.gitkeep",
        "seed/summarize.py",
        "solution/solution.sh",
        "tests/test_outputs.py",
    ]
    # The image's build step ran at import (offline, in the sandbox): its data is in the mount, its
    # files in the seed, the generator it removed gone; the solution used uv and apt-get as shims.
    generated = project / "scenarios" / "tb-generates-data"
    assert sorted(p.relative_to(generated).as_posix() for p in generated.rglob("*") if p.is_file()) == [
        "mounts/data/.gitkeep",  # the mount was an empty folder when written
        "mounts/data/numbers.csv",
        "prompt.md",
        "reference/total.py",
        "reference/total.txt",
        "scenario.yaml",
        "seed/made.txt",
        "solution/solution.sh",
        "tests/test_outputs.py",
    ]
    assert (generated / "reference" / "total.txt").read_text() == "55\n"
    assert (project / "specs" / "matrices" / "mine.yaml").read_bytes() == mine  # never edited
    # A negative of an imported scenario names the one test it must fail, by its id.
    _negative(folder, "wrong-totals", "out/summary.txt", "north: 12\n", "test_summary_totals")
    checked = assay("--project", project, "validate", "--scenario", "tb-csv-summary")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    _negative(folder, "wrong-totals", "out/summary.txt", "north: 12\n", "test_greeting")
    checked = assay("--project", project, "validate", "--scenario", "tb-csv-summary")
    assert checked.returncode == 1
    assert (
        "tb-csv-summary [negative wrong-totals] check tests::test_outputs.py::test_summary_totals: fails,"
        " but the negative does not name it" in checked.stdout
    )
    _negative(folder, "wrong-totals", "out/summary.txt", "north: 12\n", "test_summary_totals")
    assert assay("--project", project, "compile").returncode == 0
    job = json.loads((project / "generated" / "jobs" / "tb" / "tb-csv-summary.json").read_text())
    assert "`{{region}}: {{total}}`" in job["scenario"]["prompt"]  # Jinja syntax escaped, rendered back
    assert json.loads((project / "generated" / "manifest.json").read_text())["matrices"]["mine"]["jobs"] == 0
    ran = assay("--project", project, "matrix", "tb")
    assert ran.returncode == 0, ran.stderr
    grades = _grades(project, "tb", "tb-generates-data")
    assert {a: g["passed"] for a, g in grades.items()} == {"noop": False, "oracle": True}
    # uv's image, its installer and `uv run` by path stood in for; the test script's data
    # generation is the check's setup, run before pytest on the agent's workspace.
    again = project / "scenarios" / "tb-regenerates-data"
    assert (again / "seed" / "orders.csv").read_text().splitlines()[-1] == "10"
    assert not (again / "seed" / "make_data.py").exists()
    assert "python3 /tests/generate_data.py" in (again / "scenario.yaml").read_text()
    grades = _grades(project, "tb", "tb-regenerates-data")
    assert {a: g["passed"] for a, g in grades.items()} == {"noop": False, "oracle": True}
    assert [t["outcome"] for t in grades["noop"]["checks"][0]["tests"]] == ["pass", "fail"]
    # The solution changed a file of the writable /data in place: that mount's reference overlay,
    # which validate judged and the oracle applies at /data.
    gaps = project / "scenarios" / "tb-fills-gaps"
    assert (gaps / "reference-mounts" / "data" / "levels.csv").read_text() == "level\n1\n2\n3\n"
    assert (gaps / "mounts" / "data" / "levels.csv").read_text() == "level\n1\n\n3\n"
    assert "reference: reference-mounts/data" in (gaps / "scenario.yaml").read_text()
    grades = _grades(project, "tb", "tb-fills-gaps")
    assert {a: g["passed"] for a, g in grades.items()} == {"noop": False, "oracle": True}
    grades = _grades(project, "tb", "tb-csv-summary")
    assert {a: g["passed"] for a, g in grades.items()} == {"noop": False, "oracle": True}
    (check,) = grades["oracle"]["checks"]
    assert [(t["id"], t["outcome"]) for t in check["tests"]] == [
        ("test_outputs.py::test_summary_exists", "pass"),
        ("test_outputs.py::test_summary_totals", "pass"),
        ("test_outputs.py::test_greeting", "pass"),
        ("test_outputs.py::test_input_untouched", "pass"),
    ]
    assert [t["outcome"] for t in grades["noop"]["checks"][0]["tests"]] == ["fail", "fail", "fail", "pass"]


def test_harbor_task(project: Path, dataset: Callable[[str], Path]) -> None:
    require_sandbox()
    prebuild(project, Environment(python=VERSION, pip=("pytest",)))
    task = dataset("harbor") / "word-count"
    commit = _commit(task.parent)
    (task / "instruction.md").write_text((task / "instruction.md").read_text() + "Use Python.\n")  # an edit
    done = assay("--project", project, "import", "harbor", task)
    assert done.returncode == 0, done.stderr
    report = json.loads((project / "imports" / "word-count.json").read_text())
    assert report["imported"] == ["word-count"]
    assert (report["commit"], report["repo_path"]) == (commit, "word-count")
    assert report["local_changes"] == ["modified word-count/instruction.md"]
    assert (
        "**with local changes** (1, `git status`): `modified word-count/instruction.md`."
        in (project / "imports" / "word-count.md").read_text()
    )
    assert assay("--project", project, "compile").returncode == 0
    assert assay("--project", project, "matrix", "word-count").returncode == 0
    grades = _grades(project, "word-count", "word-count")
    assert {a: g["passed"] for a, g in grades.items()} == {"noop": False, "oracle": True}
    assert [t["id"] for t in grades["oracle"]["checks"][0]["tests"]] == [
        "test_wc.py::test_count_words",
        "test_wc.py::test_counts_file",
    ]


EXAMPLE = ("specs", "scenarios", "tools", "agents", "guides", "wiki")
"""The example project's folders (what `nox -s import-datasets` copies)."""


def _matrices(project: Path) -> dict[str, object]:
    compiled = assay("--project", project, "compile")
    assert compiled.returncode == 0, compiled.stderr
    return dict(json.loads((project / "generated" / "manifest.json").read_text())["matrices"])


def test_an_import_into_the_example_project_leaves_its_matrices_alone(
    tmp_path: Path, dataset: Callable[[str], Path]
) -> None:
    """The import's matrix is its own (oracle and no-op, the control cell); `default`, `demo` and
    every other spec of the project select and say exactly what they did before."""
    require_sandbox()
    project = tmp_path / "example"
    for folder in EXAMPLE:
        if (ROOT / folder).is_dir():
            shutil.copytree(ROOT / folder, project / folder, symlinks=True)
    prebuild(project, Environment(python=VERSION, pip=("pytest",)))
    specs = {p: p.read_bytes() for p in sorted((project / "specs").rglob("*")) if p.is_file()}
    before = _matrices(project)
    done = assay("--project", project, "import", "harbor", dataset("harbor"), "--name", "wc")
    assert done.returncode == 0, done.stderr
    after = _matrices(project)
    assert {k: v for k, v in after.items() if k != "wc"} == before
    assert {p: p.read_bytes() for p in specs} == specs
    assert sorted(p for p in (project / "specs").rglob("*") if p.is_file() and p not in specs) == [
        project / "specs" / "matrices" / "wc.yaml"
    ]
    wc = after["wc"]
    assert isinstance(wc, dict)
    control = next(
        line.split(":", 1)[1].strip()
        for line in (project / "specs" / "project.yaml").read_text().splitlines()
        if line.startswith("control:")
    )
    assert (wc["scenarios"], wc["agents"], wc["cells"], wc["jobs"]) == (
        ["wc-word-count"],
        ["oracle", "noop"],
        [control],
        2,
    )


def test_a_failed_solution_leaves_no_temporary_copy(
    project: Path, dataset: Callable[[str], Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_sandbox()
    prebuild(project, Environment(python=VERSION, pip=("pytest",)))
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(temp))
    task = dataset("terminal-bench") / "csv-summary"
    (task / "solution.sh").write_text("#!/bin/bash\nexit 3\n")
    done = assay("--project", project, "import", "terminal-bench", task)
    assert done.returncode == 1 and "the solution failed here (exit 3" in done.stderr, done.stderr
    assert sorted(p.name for p in temp.iterdir() if p.name.startswith("assay-import-")) == []
