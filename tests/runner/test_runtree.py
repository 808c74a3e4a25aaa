"""A run tree loses nothing: finished means graded, one writer, corrupt files, resume policy, CLI errors.

Real runs of the fixture project through the real CLI (in-process where no signal is involved).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from compiler.contract import Job
from harness.artifacts import lock
from harness.artifacts.names import GRADE_FILE, JOB_FILE, LOCK_FILE, RUN_FILE, SCRATCH_DIR
from harness.artifacts.records import read_grade, read_run
from harness.artifacts.run_tree import find_runs, read_job, run_dir_for
from tests.helpers import assay, compiled_copy, matrix_argv, write_jobs

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def compiled(tmp_path: Path) -> Path:
    """A compiled copy of the small valid project (matrix `smoke`)."""
    return compiled_copy(tmp_path / "compiled")


def _jobs(folder: Path, command: str = "exit 0", n: int = 3) -> list[Job]:
    return write_jobs(folder, command, n=n, matrix="m")


def _matrix(project: Path, jobs: Path, runs: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return assay("--project", project, "matrix", "--job-file", jobs, "--runs", runs, *extra)


def _verdicts(runs: Path) -> dict[str, tuple[str, bool | None]]:
    out = {}
    for d in find_runs(runs):
        grade = read_grade(d)
        out[read_run(d).job_id] = (grade.status.value, grade.passed) if grade else ("none", None)
    return out


def test_a_finished_run_without_a_grade_is_graded_not_run_again(project: Path, tmp_path: Path) -> None:
    _jobs(tmp_path / "jobs")
    runs = tmp_path / "runs"
    assert _matrix(project, tmp_path / "jobs", runs).returncode == 0
    first = _verdicts(runs)
    dirs = find_runs(runs)
    started = {d: read_run(d).started_at for d in dirs}
    (dirs[0] / GRADE_FILE).unlink()  # a kill between run.json and grade.json
    (dirs[1] / GRADE_FILE).write_text('{"schema_version": 1, "sta')  # a kill mid-write elsewhere
    again = _matrix(project, tmp_path / "jobs", runs)
    assert again.returncode == 0, again.stderr
    assert "2 finished trial(s) without a grade are graded" in again.stderr
    assert _verdicts(runs) == first
    assert {d: read_run(d).started_at for d in dirs} == started  # no agent ran again


def test_resume_retries_infrastructure_failures_unless_told_not_to(project: Path, tmp_path: Path) -> None:
    jobs = _jobs(tmp_path / "jobs", n=2)
    runs = tmp_path / "runs"
    assert _matrix(project, tmp_path / "jobs", runs).returncode == 0
    broken = run_dir_for(jobs[0], runs)
    data = json.loads((broken / RUN_FILE).read_text())
    data["error"] = "OSError: provider outage"
    (broken / RUN_FILE).write_text(json.dumps(data))
    kept = _matrix(project, tmp_path / "jobs", runs, "--retry", "none")
    assert "nothing to run" in kept.stderr and read_run(broken).error
    retried = _matrix(project, tmp_path / "jobs", runs)
    assert retried.returncode == 0, retried.stderr
    assert "1 trial(s) that failed on the harness's side run again" in retried.stderr
    assert read_run(broken).error is None


def test_a_damaged_job_json_is_restored_or_called_corrupt_never_stale(project: Path, tmp_path: Path) -> None:
    (job,) = _jobs(tmp_path / "jobs", n=1)
    runs = tmp_path / "runs"
    assert _matrix(project, tmp_path / "jobs", runs).returncode == 0
    run_dir = run_dir_for(job, runs)
    text = (run_dir / JOB_FILE).read_text()
    (run_dir / JOB_FILE).write_text(text.replace('"exit 0"', '"exit 1"'))  # valid JSON, edited
    with pytest.raises(ValueError, match="digest does not match"):
        read_job(run_dir)
    (run_dir / JOB_FILE).write_text(text[: len(text) // 2])
    regraded = assay("--project", project, "grade", run_dir, "--regrade")
    grade = read_grade(run_dir)
    assert grade is not None and "corrupt" in (grade.error or ""), regraded.stderr
    assert "another grader" not in regraded.stderr


def test_assay_grade_repairs_a_truncated_grade(project: Path, tmp_path: Path) -> None:
    (job,) = _jobs(tmp_path / "jobs", n=1)
    runs = tmp_path / "runs"
    assert _matrix(project, tmp_path / "jobs", runs).returncode == 0
    run_dir = run_dir_for(job, runs)
    good = read_grade(run_dir)
    for argv in (("grade", run_dir), ("grade", run_dir, "--regrade")):
        (run_dir / GRADE_FILE).write_text('{\n  "authorities": {')
        done = assay("--project", project, *argv)
        assert done.returncode in (0, 1) and "Traceback" not in done.stderr, done.stderr
        again = read_grade(run_dir)
        assert good is not None and again is not None and again.passed == good.passed


def test_a_second_runner_on_the_tree_refuses_in_one_line(project: Path, tmp_path: Path) -> None:
    _jobs(tmp_path / "jobs", n=1)
    runs = tmp_path / "runs"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"from harness.artifacts import lock; from pathlib import Path\n"
            f"with lock.hold(Path({str(runs)!r})):\n    print('held', flush=True); input()",
        ],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        second = _matrix(project, tmp_path / "jobs", runs)
        assert second.returncode == 4
        lines = second.stderr.strip().splitlines()
        assert len(lines) == 1 and f"pid {holder.pid}" in lines[0] and "--wait" in lines[0], second.stderr
        assert not find_runs(runs)
    finally:
        holder.communicate(input="\n", timeout=30)
    # the holder is gone: its lock with it; a dead holder's stale file is taken over
    assert (runs / LOCK_FILE).exists()
    assert _matrix(project, tmp_path / "jobs", runs).returncode == 0
    assert len(find_runs(runs)) == 1


def test_scratch_lives_in_the_tree_and_a_dead_holders_is_emptied(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    left = runs / SCRATCH_DIR / "99999999" / "assay-grade-x"
    left.mkdir(parents=True)
    with lock.hold(runs) as scratch:
        import tempfile

        assert Path(tempfile.mkdtemp(prefix="assay-check-")).parent == scratch
        assert not left.exists() and scratch.parent == runs / SCRATCH_DIR
    assert not scratch.exists()


def test_host_folders_made_once_per_process_live_in_memory_and_a_dead_ones_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shm = tmp_path / "shm"
    shm.mkdir()
    monkeypatch.setattr(lock, "SHM", str(shm))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    dead = shm / "assay-etc-99999999-x"
    dead.mkdir()
    made = lock.host_tmp("etc", memory=True)
    assert made.parent == shm and made.name.startswith(f"assay-etc-{os.getpid()}-")
    assert (made.stat().st_mode & 0o777) == 0o700
    assert not dead.exists()  # its process is gone
    assert lock.host_tmp("gw").parent == tmp_path / "tmp"  # a socket's folder stays in TMPDIR
    monkeypatch.setattr(lock, "SHM", str(tmp_path / "no-shm"))  # no tmpfs here: the temp dir serves
    assert lock.host_tmp("etc", memory=True).parent == tmp_path / "tmp"


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (("run", "smoke/none/none/off/cmd/fix/t99"), "no job"),
        (("run", "not-an-id"), "not a job id"),
        (("matrix", "nosuch"), "unknown matrix"),
        (("matrix", "smoke", "--parallel", "0"), "--parallel 0"),
        (("matrix", "smoke", "--parallel", "-1"), "out of range"),
        (("matrix", "smoke", "--parallel", "100000"), "out of range"),
        (("matrix", "smoke", "--trials", "0"), "out of range"),
        (("matrix", "smoke", "--retry", "bogus"), "unknown outcome"),
    ],
)
def test_a_users_mistake_is_one_line_and_exit_2(compiled: Path, argv: tuple[str, ...], needle: str) -> None:
    done = assay("--project", compiled, *argv)
    assert done.returncode == 2, done.stderr
    assert needle in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("damage", "needle"),
    [
        (lambda m: m.write_text("{garbage"), "manifest.json"),
        (lambda m: m.write_text(json.dumps({**json.loads(m.read_text()), "schema_version": 99})), "newer"),
    ],
)
def test_a_damaged_or_newer_generated_folder_is_one_line(compiled: Path, damage: object, needle: str) -> None:
    damage(compiled / "generated" / "manifest.json")  # type: ignore[operator]
    done = assay("--project", compiled, "matrix", "smoke")
    assert done.returncode == 2 and needle in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_job_files_are_verified(project: Path, tmp_path: Path) -> None:
    _jobs(tmp_path / "jobs", n=1)
    path = tmp_path / "jobs" / "t01.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "schema_version": 7}))
    done = _matrix(project, tmp_path / "jobs", tmp_path / "runs")
    assert done.returncode == 2 and "schema_version 7" in done.stderr, done.stderr


def test_an_unwritable_runs_folder_is_one_line(project: Path, tmp_path: Path) -> None:
    _jobs(tmp_path / "jobs", n=1)
    blocker = tmp_path / "file"
    blocker.write_text("")
    done = _matrix(project, tmp_path / "jobs", blocker / "runs")
    assert done.returncode == 74 and "cannot write" in done.stderr and "Traceback" not in done.stderr


def test_a_closed_stderr_never_stops_the_matrix(project: Path, tmp_path: Path) -> None:
    _jobs(tmp_path / "jobs", n=3)
    runs = tmp_path / "runs"
    argv = matrix_argv(project, "--parallel", "1", runs=runs, jobs=tmp_path / "jobs")
    done = subprocess.run(
        argv,
        cwd=ROOT,
        stderr=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        pass_fds=(),
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
        preexec_fn=lambda: os.close(2),
    )
    assert done.returncode == 0
    assert len([d for d in find_runs(runs) if read_grade(d) is not None]) == 3


def test_a_report_over_a_partial_matrix_names_what_is_missing(compiled: Path, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    ran = assay("--project", compiled, "matrix", "smoke", "--cell", "none/none/off", "--runs", runs)
    assert ran.returncode == 0, ran.stderr
    out = tmp_path / "report"
    done = assay("--project", compiled, "report", runs / "smoke", "--out", out)
    assert done.returncode == 0, done.stderr
    summary = json.loads((out / "summary.json").read_text())
    cells = {c["cell"]: c for c in summary["completeness"]["cells"]}
    assert cells["none/none/off"]["done"] == cells["none/none/off"]["planned"] > 0
    missing = cells["bin/none/off"]
    assert missing["done"] == 0 and len(missing["not_run"]) == missing["planned"] > 0
    report = (out / "report.md").read_text()
    assert f"bin/none/off: 0 of {missing['planned']} planned trials done" in report
    assert missing["not_run"][0] in report


def test_a_garbage_run_json_is_run_again_and_the_report_survives_it(project: Path, tmp_path: Path) -> None:
    jobs = _jobs(tmp_path / "jobs", n=2)
    runs = tmp_path / "runs"
    assert _matrix(project, tmp_path / "jobs", runs).returncode == 0
    broken = run_dir_for(jobs[0], runs)
    (broken / RUN_FILE).write_bytes(b"\x00\xff{ not json")
    report = assay("--project", project, "report", runs, "--out", tmp_path / "r")
    assert report.returncode == 0 and "Traceback" not in report.stderr, report.stderr
    again = _matrix(project, tmp_path / "jobs", runs)
    assert again.returncode == 0, again.stderr
    assert read_run(broken).exit_code == 0 and read_grade(broken) is not None
