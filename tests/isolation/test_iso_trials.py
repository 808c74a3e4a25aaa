"""The hostile-agent suite end to end: each attack is an agent run by the real runner.

Every trial goes through `harness.trial.run_trial` under a real isolation; each test asserts
that the attack failed on the host, that run.json records it (unsafe edit, limit hit, refused
outbox entries, error), and — the last test — that the matrix goes on after hostile trials.
Tests named `test_attack_*` are counted by the suite's summary (tried / blocked).
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

import pytest

from compiler.contract import Canaries, Cell, Limits, Options, Provisions
from harness.artifacts.records import RunRecord
from harness.trial import run_trial
from tests.helpers import command_agent, make_job

pytestmark = pytest.mark.isolation

SECRET = "REFERENCE-SECRET-7f3a"


@pytest.fixture(autouse=True)
def secrets(project: Path) -> None:
    """What a hostile agent must not read beside the fixture project: reference, grader, .git."""
    (project / "scenarios" / "fix" / "reference" / "SECRET.txt").write_text(SECRET)
    (project / "scenarios" / "fix" / "grader").mkdir()
    (project / "scenarios" / "fix" / "grader" / "test_hidden.py").write_text("assert hidden\n")
    (project / ".git").mkdir()
    (project / ".git" / "config").write_text(SECRET)


def trial(
    project: Path,
    run_dir: Path,
    iso: str,
    command: str,
    *,
    limits: Limits | None = None,
    cell: Cell | None = None,
    writable: tuple[str, ...] = ("app/**",),
) -> RunRecord:
    job = make_job(
        agent=command_agent(command),
        options=Options(isolation=iso, infra_retries=0),
        limits=limits or Limits(timeout_s=60),
        cell=cell,
        writable=writable,
    )
    return run_trial(job, project=project, run_dir=run_dir)


def _artifacts(run_dir: Path) -> bytes:
    """Every regular file the run left (workspace, diff, logs), links not followed."""
    return b"".join(p.read_bytes() for p in run_dir.rglob("*") if p.is_file() and not p.is_symlink())


def test_attack_e2e_read_reference_grader_and_git(project: Path, tmp_path: Path, iso: str) -> None:
    scen = project / "scenarios" / "fix"
    cmd = (
        f"cat {scen}/reference/SECRET.txt {scen}/grader/test_hidden.py {project}/.git/config > app/stolen.txt 2>&1; "
        f"cp -r {scen}/reference app/ref 2>>app/stolen.txt; exit 0"
    )
    record = trial(project, tmp_path / "run", iso, cmd)
    assert record.error is None and record.isolation == iso
    assert SECRET.encode() not in _artifacts(tmp_path / "run")
    assert b"assert hidden" not in (tmp_path / "run" / "workspace" / "app" / "stolen.txt").read_bytes()


def test_attack_e2e_forge_run_and_grade_records(project: Path, tmp_path: Path, iso: str) -> None:
    cmd = (
        "cat $BENCH_RUN_DIR/job.json > app/job_copy.json 2>/dev/null; "
        "echo '{\"passed\": true}' > $BENCH_RUN_DIR/grade.json; echo forged > $BENCH_RUN_DIR/run.json; "
        "mkdir -p $BENCH_RUN_DIR/snapshots; echo x > $BENCH_RUN_DIR/snapshots/fake; exit 0"
    )
    run_dir = tmp_path / "run"
    record = trial(project, run_dir, iso, cmd)
    assert not (run_dir / "grade.json").exists()
    assert RunRecord.model_validate_json((run_dir / "run.json").read_text()) == record
    assert (run_dir / "workspace" / "app" / "job_copy.json").read_text() == ""
    assert {"grade.json", "run.json"} <= set(record.extra["sandbox_refused"])
    assert not (run_dir / "snapshots" / "fake").exists()


def test_attack_e2e_edit_hidden_grader_files(project: Path, tmp_path: Path, iso: str) -> None:
    grader = project / "scenarios" / "fix" / "grader" / "test_hidden.py"
    record = trial(project, tmp_path / "run", iso, f"echo 'assert True' > {grader}; rm -f {grader}; exit 0")
    assert grader.read_text() == "assert hidden\n"
    assert record.error is None


def test_attack_e2e_escape_writable_through_symlinks(project: Path, tmp_path: Path, iso: str) -> None:
    ref = project / "scenarios" / "fix" / "reference" / "SECRET.txt"
    cmd = (
        f"ln -s {ref} app/answer.txt; ln -s /etc/shadow app/shadow; ln -s ../README.md app/readme; "
        f"rm app/main.py; ln -s {ref} app/main.py; sleep 0.5; "  # the watched entry file: snapshots
        "echo pwned > app/readme; ln -s $BENCH_RUN_DIR/../ app/up; ln -s /etc $BENCH_RUN_DIR/steps; exit 0"
    )
    run_dir = tmp_path / "run"
    record = trial(project, run_dir, iso, cmd)
    assert "README.md" in record.unsafe_edits  # written through a link inside the workspace: still caught
    blob = _artifacts(run_dir)
    assert SECRET.encode() not in blob and b"root:" not in blob
    assert "steps" in record.extra["sandbox_refused"]
    assert not (run_dir / "steps").is_symlink()


def test_attack_e2e_read_host_environment(
    project: Path, tmp_path: Path, iso: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASSAY_HARNESS_SECRET", "harness-secret-value")
    cmd = "(env; cat /proc/*/environ; ls -a /root /home) > app/env.txt 2>&1; exit 0"
    record = trial(project, tmp_path / "run", iso, cmd)
    seen = (tmp_path / "run" / "workspace" / "app" / "env.txt").read_text(errors="replace")
    assert record.error is None
    assert "harness-secret-value" not in seen and ".ssh" not in seen


def test_attack_e2e_network_off(project: Path, tmp_path: Path, iso: str) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    probe = f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2)\""
    cell = Cell(
        name="none/none/off",
        levels={"tool": "none", "knowledge": "none", "network": "off"},
        provisions=Provisions(canaries=Canaries(must_fail=(probe,))),
    )
    try:
        record = trial(
            project,
            tmp_path / "run",
            iso,
            f"{probe} && echo reached > app/net.txt || echo blocked > app/net.txt; exit 0",
            cell=cell,
        )
    finally:
        listener.close()
    assert record.invalid is None and all(c.ok for c in record.canaries)
    assert (tmp_path / "run" / "workspace" / "app" / "net.txt").read_text() == "blocked\n"


def test_attack_e2e_background_process(project: Path, tmp_path: Path, iso: str) -> None:
    tag = f"assay-e2e-lurker-{os.getpid()}-{time.monotonic_ns()}"
    record = trial(project, tmp_path / "run", iso, f"(setsid sh -c 'exec -a {tag} sleep 30' &); exit 0")
    assert record.exit_code == 0
    time.sleep(0.3)
    assert subprocess.run(["pgrep", "-f", tag], capture_output=True, text=True).stdout.split() == []


def test_attack_e2e_fork_bomb(project: Path, tmp_path: Path, iso: str) -> None:
    record = trial(
        project,
        tmp_path / "run",
        iso,
        "b() { b | b & }; b; sleep 2; exit 0",
        limits=Limits(timeout_s=30, pids=64),
    )
    assert "pids" in record.limits_hit and record.error is None  # the agent's doing: graded
    assert record.agent_end is not None and record.agent_end.cause in ("limit", "timeout"), record.agent_end


def test_attack_e2e_memory_hog(project: Path, tmp_path: Path, iso: str) -> None:
    record = trial(
        project,
        tmp_path / "run",
        iso,
        'python3 -c "x = bytearray(512 * 1024 * 1024)"; exit 0',
        limits=Limits(timeout_s=30, memory_mb=64),
    )
    assert "memory" in record.limits_hit


def test_attack_e2e_fill_the_disk(project: Path, tmp_path: Path, iso: str) -> None:
    record = trial(
        project,
        tmp_path / "run",
        iso,
        # Until a write fails: refused by a size-limited filesystem (root), or stopped by the watcher.
        "i=0; while head -c 4000000 /dev/zero > app/f$i; do i=$((i+1)); done; exit 0",
        limits=Limits(timeout_s=30, workspace_mb=30, file_size_mb=8),
    )
    assert "workspace" in record.limits_hit and not record.timed_out


def test_attack_e2e_flood_stdout(project: Path, tmp_path: Path, iso: str) -> None:
    record = trial(
        project, tmp_path / "run", iso, "yes flood", limits=Limits(timeout_s=30, output_bytes=200_000)
    )
    assert "output" in record.limits_hit
    assert (tmp_path / "run" / "agent.log").stat().st_size <= 200_000


def test_attack_e2e_kill_the_harness(project: Path, tmp_path: Path, iso: str) -> None:
    bystander = subprocess.Popen(["sleep", "30"])
    try:
        record = trial(
            project, tmp_path / "run", iso, f"kill -9 {os.getpid()} {bystander.pid}; kill -9 -1; exit 0"
        )
        assert bystander.poll() is None
        assert (tmp_path / "run" / "run.json").exists() and record.job_id
    finally:
        bystander.kill()
        bystander.wait()


def test_matrix_goes_on_after_hostile_trials(project: Path, tmp_path: Path, iso: str) -> None:
    hostile = trial(
        project, tmp_path / "bomb", iso, "b() { b | b & }; b; sleep 1", limits=Limits(timeout_s=20, pids=64)
    )
    benign = trial(project, tmp_path / "ok", iso, "sed -i '/^import os$/d' app/main.py")
    assert hostile.limits_hit and hostile.agent_end is not None and hostile.error is None
    assert benign.error is None and benign.exit_code == 0 and benign.limits_hit == ()
    assert "import os" not in (tmp_path / "ok" / "workspace" / "app" / "main.py").read_text()


def test_attack_e2e_redirect_next_steps_evidence(project: Path, tmp_path: Path, iso: str) -> None:
    from compiler.contract import Step

    (project / "evidence.txt").write_text("clue\n")
    host_dir = tmp_path / "host-target"
    host_dir.mkdir()
    # step one plants links where step two's evidence will be written (a folder and a file)
    cmd = f"[ -e notes ] || ln -s {host_dir} notes; [ -e clue.txt ] || ln -s {host_dir}/clue2.txt clue.txt; exit 0"
    job = make_job(
        agent=command_agent(cmd),
        options=Options(isolation=iso, infra_retries=0),
        limits=Limits(timeout_s=60),
        writable=("**",),
    )
    steps = (
        Step(name="one", prompt="first"),
        Step(name="two", prompt="second", evidence={"notes/clue.txt": "evidence.txt"}),
    )
    job = job.model_copy(update={"scenario": job.scenario.model_copy(update={"steps": steps})})
    record = run_trial(job, project=project, run_dir=tmp_path / "run")
    assert list(host_dir.iterdir()) == []
    # the agent's doing (its earlier session planted the links): graded as it stands, never excluded
    assert record.error is None and record.agent_end is not None
    assert record.agent_end.cause == "blocked" and "evidence" in record.agent_end.detail
    assert record.agent_end.step == "2/2 (two)"
