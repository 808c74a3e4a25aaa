"""`assay grade` as a user runs it (the CLI in-process, the system PATH only): exit codes, progress, stale flags."""

from __future__ import annotations

import json
from pathlib import Path

from tests.grade.helpers import BROKEN_PY, VALID_PY, command, demo_job, make_project, make_run, scenario
from tests.helpers import BARE_ENV, assay


def test_grade_tree_exit_codes_and_stale_flag(tmp_path: Path) -> None:
    project = make_project(tmp_path / "proj", seed={"app/main.py": "x = 1\n"})
    scen = scenario([command("compiles", "python -m py_compile app/main.py")])
    runs = tmp_path / "proj" / "runs"
    make_run(runs / "a" / "trial-01", demo_job(scen, trial=1), workspace={"app/main.py": VALID_PY})
    make_run(runs / "a" / "trial-02", demo_job(scen, trial=2), workspace={"app/main.py": VALID_PY})
    done = assay("grade", "runs", cwd=project, env=BARE_ENV)
    assert done.returncode == 0, done.stderr
    assert "2 run(s): graded 2" in done.stdout and "passed 2, failed 0" in done.stdout
    assert "[2/2] graded" in done.stderr

    (runs / "a" / "trial-02" / "workspace" / "app" / "main.py").write_text(BROKEN_PY)
    again = assay("grade", "runs", cwd=project, env=BARE_ENV)
    assert again.returncode == 0 and "reused 2" in again.stdout  # stored verdicts are reused

    # a check changes in the run's job: the stored grades are stale, flagged, kept
    job_file = runs / "a" / "trial-02" / "job.json"
    data = json.loads(job_file.read_text())
    data["scenario"]["checks"][0]["timeout_s"] = 30.0
    job_file.write_text(json.dumps(data))
    flagged = assay("grade", "runs", cwd=project, env=BARE_ENV)
    assert "stale 1" in flagged.stdout and "--regrade" in flagged.stderr

    regraded = assay("grade", "runs", "--regrade", cwd=project, env=BARE_ENV)
    assert regraded.returncode == 1, regraded.stdout
    assert "regraded 2" in regraded.stdout and "passed 1, failed 1" in regraded.stdout


def test_grade_nothing_and_missing(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert assay("grade", "empty", cwd=tmp_path, env=BARE_ENV).returncode == 3
    missing = assay("grade", "nope", cwd=tmp_path, env=BARE_ENV)
    assert missing.returncode == 2 and "does not exist" in missing.stderr


def test_parallel_grading_matches_serial(tmp_path: Path) -> None:
    from harness.grade import grade_tree
    from tests.grade.helpers import strip_times

    project = make_project(tmp_path / "proj", seed={"app/main.py": "x = 1\n"})
    scen = scenario([command("compiles", "python -m py_compile app/main.py")])
    runs = tmp_path / "runs"
    for n in range(1, 5):
        make_run(
            runs / f"t{n}",
            demo_job(scen, trial=n),
            workspace={"app/main.py": VALID_PY if n % 2 else BROKEN_PY},
        )
    serial = grade_tree(runs, project=project, regrade=True)
    parallel = grade_tree(runs, project=project, regrade=True, parallel=2)
    assert [e.run_dir for e in serial] == [e.run_dir for e in parallel]
    assert [strip_times(e.grade.model_dump(mode="json")) for e in serial] == [
        strip_times(e.grade.model_dump(mode="json")) for e in parallel
    ]
    assert [e.grade.passed for e in parallel] == [True, False, True, False]


def test_misconfigured_judges_refused_before_grading(tmp_path: Path) -> None:
    project = make_project(tmp_path / "proj", seed={"app/main.py": "x = 1\n"})
    scen = scenario([command("compiles", "python -m py_compile app/main.py")])
    make_run(project / "runs" / "t1", demo_job(scen), workspace={"app/main.py": VALID_PY})
    (project / "judges.yaml").write_text(
        "default: { provider: anthropic, model: m, base_url: 'http://127.0.0.1:9', api_key_env: ASSAY_NO_SUCH_VAR }\n"
    )
    done = assay("grade", "runs", "--judges", "judges.yaml", cwd=project, env=BARE_ENV)
    assert done.returncode == 2 and "ASSAY_NO_SUCH_VAR" in done.stderr
    assert not (project / "runs" / "t1" / "grade.json").exists()


def test_relative_project_with_tool_folders_in_the_check_sandbox(tmp_path: Path) -> None:
    # `--project .` (the default) with a cell whose tools live in the project: the folders bound
    # into the check sandbox must be absolute, or every check fails for the sandbox's sake.
    project = make_project(tmp_path / "proj", seed={"app/main.py": "x = 1\n"})
    (project / "tools" / "bin").mkdir(parents=True)
    scen = scenario([command("compiles", "python -m py_compile app/main.py")])
    make_run(
        project / "runs" / "t1", demo_job(scen, path=("tools/bin",)), workspace={"app/main.py": VALID_PY}
    )
    done = assay("grade", "runs", cwd=project, env=BARE_ENV)
    grade = json.loads((project / "runs" / "t1" / "grade.json").read_text())
    assert done.returncode == 0, grade["diagnostics"]
    assert grade["passed"] is True
