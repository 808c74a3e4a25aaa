"""`assay run` and `assay matrix` over a compiled copy of the example suite (real compile, run, grade)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.artifacts.records import read_grade, read_run
from harness.artifacts.run_tree import find_runs
from tests.helpers import assay

ROOT = Path(__file__).resolve().parents[2]
PARTS = ("specs", "scenarios", "tools", "guides", "wiki")


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not (ROOT / "specs" / "matrices" / "demo.yaml").is_file():
        pytest.skip("the example suite (specs/matrices/demo.yaml) is not in this checkout")
    project = tmp_path_factory.mktemp("suite")
    for part in PARTS:
        if (ROOT / part).exists():
            shutil.copytree(ROOT / part, project / part)
    done = assay("--project", project, "compile")
    assert done.returncode == 0, done.stderr
    return project


def test_run_one_job_by_id_then_skip_it(suite: Path) -> None:
    job = "demo/none/none/off/oracle/triage-name-error/t01"
    done = assay("--project", suite, "run", job)
    assert done.returncode == 0, done.stderr
    runs = find_runs(suite / "runs")
    assert len(runs) == 1
    record = read_run(runs[0])
    assert record.job_id == job and record.exit_code == 0
    grade = read_grade(runs[0])
    assert grade is not None and grade.passed, grade
    again = assay("--project", suite, "run", job)
    assert again.returncode == 0 and "1 finished trial(s) skipped" in again.stderr


@pytest.mark.slow
def test_matrix_filters_and_progress(suite: Path) -> None:
    done = assay(
        "--project", suite, "matrix", "demo", "--agent", "noop", "--trials", "1", "--runs", str(suite / "r2")
    )
    assert done.returncode == 0, done.stderr
    records = [read_run(d) for d in find_runs(suite / "r2")]
    assert records and {r.agent for r in records} == {"noop"} and {r.trial for r in records} == {1}
    assert f"[{len(records)}/{len(records)}] pass 0, fail {len(records)}" in done.stderr


def test_nothing_selected_exits_3_and_lists_what_exists(suite: Path) -> None:
    done = assay("--project", suite, "matrix", "demo", "--agent", "nobody")
    assert done.returncode == 3, done.stderr
    assert (
        "--agent nobody: matrix 'demo' has agents noop, oracle, scripted-good, scripted-weak" in done.stderr
    )
    default = assay("--project", suite, "matrix", "default", "--agent", "oracle", "--cell", "bin/nowhere/off")
    assert default.returncode == 3
    assert "--agent oracle: matrix 'default' has agents scripted-good, scripted-weak" in default.stderr
    assert "--cell bin/nowhere/off: matrix 'default' has cells none/none/off, " in default.stderr
    # Each exists, but the matrix's exclude leaves the pair out.
    excluded = assay("--project", suite, "matrix", "demo", "--agent", "oracle", "--cell", "bin/none/off")
    assert excluded.returncode == 3
    assert "matrix 'demo' has no job that combines --agent oracle --cell bin/none/off" in excluded.stderr
    unknown = assay("--project", suite, "matrix", "nosuch")
    assert unknown.returncode == 2 and "unknown matrix 'nosuch'; compiled: default, demo" in unknown.stderr
    assert "Traceback" not in unknown.stderr
    bad_id = assay("--project", suite, "run", "demo/none/none/off/oracle/nope/t01")
    assert bad_id.returncode == 2 and "matrix 'demo' has no scenario 'nope'" in bad_id.stderr
