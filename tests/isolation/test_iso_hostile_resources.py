"""The hostile-agent suite, the host's resources: the limits are on by default.

Each attack is an agent run by the real runner (`run_trial`) under a real isolation, with a job
that names no limit but its timeout. A fork bomb and a flood of the run directory's outbox are
stopped within seconds and recorded in run.json (`limits_hit`); a disk fill without end is
refused by the kernel at the workspace limit (a root harness puts the trial's folders on a tmpfs
of that size), a check that fills the disk likewise, and a flood of the entry file's snapshots
stops at their budget. Tests named `test_attack_*` are counted by the suite's summary.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from compiler.contract import Limits, Options
from harness.artifacts.records import RunRecord
from harness.trial import run_trial
from tests.helpers import command_agent, make_job
from tests.isolation.conftest import run_agent

pytestmark = pytest.mark.isolation


# Limits on by default: the job names only a timeout, every other limit is the contract's default.


def test_attack_e2e_fork_bomb_under_the_default_limits(project: Path, tmp_path: Path, iso: str) -> None:
    started = time.monotonic()
    record = run_agent(project, tmp_path / "run", iso, "b() { b | b & }; b; sleep 50; exit 0", timeout_s=30)
    took = time.monotonic() - started
    assert "pids" in record.limits_hit, record.limits_hit
    assert not record.timed_out and took < 20, f"the fork bomb ran {took:.1f} s"
    assert record.limits_applied["pids"] == f"{Limits().pids} (cgroup)" or os.geteuid() != 0


def _disk_kept() -> bool:
    """Whether this harness can put a trial's folders on size-limited filesystems (it is root)."""
    return os.geteuid() == 0


def test_attack_e2e_fill_the_disk_under_the_default_limits(project: Path, tmp_path: Path, iso: str) -> None:
    # fallocate takes the blocks at once: 2 GB in a blink, in TMPDIR (the workspace limit counts it).
    cmd = 'i=0; while [ $i -lt 10 ] && fallocate -l 200M "$TMPDIR/fill$i"; do i=$((i+1)); done; exit 0'
    started = time.monotonic()
    run_dir = tmp_path / "run"
    try:
        record = run_agent(project, run_dir, iso, cmd, timeout_s=30)
    finally:
        shutil.rmtree(run_dir / "tmp", ignore_errors=True)
    assert "workspace" in record.limits_hit, record.limits_hit
    assert not record.timed_out and time.monotonic() - started < 20
    how = "tmpfs" if _disk_kept() else "watch"
    assert record.limits_applied["workspace"] == f"{Limits().workspace_mb} MB ({how})"
    if _disk_kept():  # refused by the kernel, not stopped: the agent's exit and its work are graded
        assert record.error is None and record.exit_code == 0, record.error
        assert record.protections is not None and record.protections.disk_limited


def _free(path: Path) -> int:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


@pytest.fixture
def private_disk(tmp_path: Path) -> Iterator[Path]:
    """A filesystem of this test's own (1.5 GB of tmpfs) to hold the run and the grader's scratch:
    what a broken limit would spill is counted here, where nothing else on the machine writes (the
    host's free space moves with every other process), and can never fill the host's disk."""
    folder = tmp_path / "disk"
    folder.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1536m,mode=0755", "tmpfs", str(folder)], check=True)
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def _mounted_under(folder: Path) -> list[str]:
    return [line for line in Path("/proc/self/mountinfo").read_text().splitlines() if f" {folder}/" in line]


def test_attack_e2e_fill_the_disk_without_end(project: Path, private_disk: Path, iso: str) -> None:
    """fallocate and dd until the disk refuses: the kernel stops them at the limit, the host's disk
    loses at most the limit, and the agent, refused, carries on and is graded."""
    if not _disk_kept():
        pytest.skip(
            "mounting a size-limited filesystem needs a root harness (the limit is only watched here)"
        )
    limit = 48
    # The test's own safety bound: 4 GB, 85 times the limit (the kernel must stop it long before).
    cmd = (
        'i=0; while [ $i -lt 512 ] && fallocate -l 8M "$TMPDIR/fill$i"; do i=$((i+1)); done; '
        "echo $i > $BENCH_RUN_DIR/fallocated.txt; "
        "dd if=/dev/zero of=app/dd.bin bs=1M count=4096 2>/dev/null; "
        "echo refused-and-went-on > $BENCH_RUN_DIR/after.txt; exit 3"
    )
    run_dir = private_disk / "run"
    free_before = _free(private_disk)
    job = make_job(
        agent=command_agent(cmd),
        options=Options(isolation=iso, infra_retries=0),
        limits=Limits(timeout_s=60, workspace_mb=limit),
    )
    record = run_trial(job, project=project, run_dir=run_dir)
    lost = free_before - _free(private_disk)
    assert lost < 400 * 1024 * 1024, f"the host's disk lost {lost >> 20} MB"  # 4 GB without the limit
    assert record.error is None and not record.timed_out, record.error
    assert "workspace" in record.limits_hit, record.limits_hit
    assert record.limits_applied["workspace"] == f"{limit} MB (tmpfs)"
    assert record.exit_code == 3 and (run_dir / "after.txt").read_text() == "refused-and-went-on\n"
    assert 0 < int((run_dir / "fallocated.txt").read_text()) < limit // 8
    # What it wrote is real files in the preserved workspace, and no more than the limit.
    written = sum(
        f.stat().st_size  # a fallocated block is copied out as a hole: it holds only zeros
        for f in (*run_dir.joinpath("tmp").iterdir(), run_dir / "workspace/app/dd.bin")
    )
    assert limit * 1024 * 1024 * 0.9 < written <= limit * 1024 * 1024
    assert not _mounted_under(run_dir), _mounted_under(run_dir)
    assert not (run_dir / ".disk").exists()
    from harness.grade.core import grade_run

    grade = grade_run(run_dir, project=project)
    assert grade.status.value == "graded", grade


def test_attack_e2e_a_check_that_fills_the_disk(
    project: Path, private_disk: Path, iso: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Checks run code the agent wrote (its tests, its build): the grader's scratch copy is a
    filesystem of twice the workspace limit, so a check that writes without end is refused too."""
    if not _disk_kept():
        pytest.skip(
            "mounting a size-limited filesystem needs a root harness (the limit is only watched here)"
        )
    import tempfile

    from compiler.contract import CheckSpec
    from harness.grade.core import grade_run
    from tests.helpers import fix_scenario

    fill = CheckSpec(
        id="fills", kind="command", params={"run": "dd if=/dev/zero of=fill bs=1M count=4096 2>/dev/null"}
    )
    job = make_job(
        fix_scenario(checks=(fill,)),
        agent=command_agent("exit 0"),
        options=Options(isolation=iso, infra_retries=0),
        limits=Limits(timeout_s=60, workspace_mb=24),
    )
    run_dir = private_disk / "run"
    run_trial(job, project=project, run_dir=run_dir)
    scratch = private_disk / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))  # the grader's scratch copy goes here
    free_before = _free(private_disk)
    grade = grade_run(run_dir)
    lost = free_before - _free(private_disk)
    assert lost < 1024 * 1024 * 1024, f"the host's disk lost {lost >> 20} MB"  # 4 GB without the limit
    assert grade.status.value == "graded", grade
    outcome = {c.id: c for c in grade.checks}["fills"]
    assert outcome.outcome == "fail", outcome  # dd was refused (ENOSPC) at 48 MB
    mine = f" assay-disk-p{os.getpid()} "  # the mount table is the machine's: other harnesses grade too
    assert not [
        line
        for line in Path("/proc/self/mountinfo").read_text().splitlines()
        if "assay-grade-" in line and mine in line
    ]


def test_attack_e2e_fill_the_disk_in_concurrent_trials(project: Path, tmp_path: Path, iso: str) -> None:
    """Each trial has a limit of its own: two filling at once each get their limit, no more, no less."""
    if not _disk_kept():
        pytest.skip(
            "mounting a size-limited filesystem needs a root harness (the limit is only watched here)"
        )
    from concurrent.futures import ThreadPoolExecutor

    cmd = "dd if=/dev/zero of=app/dd.bin bs=1M count=512 2>/dev/null; exit 0"

    def one(name: str, limit: int) -> RunRecord:
        job = make_job(
            agent=command_agent(cmd),
            options=Options(isolation=iso, infra_retries=0),
            limits=Limits(timeout_s=60, workspace_mb=limit),
        )
        return run_trial(job, project=project, run_dir=tmp_path / name)

    with ThreadPoolExecutor(2) as pool:
        records = list(pool.map(one, ("a", "b"), (24, 40)))
    for name, limit, record in zip(("a", "b"), (24, 40), records, strict=True):
        assert record.error is None and "workspace" in record.limits_hit, record
        size = (tmp_path / name / "workspace/app/dd.bin").stat().st_size
        assert (limit - 2) * 1024 * 1024 < size <= limit * 1024 * 1024, (name, size >> 20)


def test_attack_e2e_flood_the_run_directory_outbox(project: Path, tmp_path: Path, iso: str) -> None:
    cmd = (
        'echo small > "$BENCH_RUN_DIR/a-note.txt"; '
        'dd if=/dev/zero of="$BENCH_RUN_DIR/flood.bin" bs=1M count=800 2>/dev/null; exit 0'
    )
    run_dir = tmp_path / "run"
    started = time.monotonic()
    record = run_agent(project, run_dir, iso, cmd, timeout_s=30)
    assert "outbox" in record.limits_hit, record.limits_hit
    if _disk_kept():  # the kernel refused past 256 MB; what the outbox held is the run's
        assert record.limits_applied["outbox"] == f"{Limits().outbox_mb} MB (tmpfs)"
        assert (run_dir / "flood.bin").stat().st_size <= Limits().outbox_mb * 1024 * 1024
    else:  # the watcher stopped it and the flood was refused
        assert not (run_dir / "flood.bin").exists(), "the flood reached the run directory"
        assert "flood.bin (over the outbox limit)" in record.extra["sandbox_refused"]
    assert not record.timed_out and time.monotonic() - started < 20
    assert (run_dir / "a-note.txt").read_text() == "small\n"  # what fits the limit is kept


def test_attack_e2e_flood_the_snapshots(project: Path, tmp_path: Path, iso: str) -> None:
    """The entry file is copied after each write, outside the size-limited folders: 40 versions of
    15 MB and a last one of 1,000 MB (mostly a hole: no disk) had put 1.6 GB on the run directory's
    disk. A version over the size a snapshot keeps is recorded without a copy (the last one, taken
    once the agent is gone), the copies of a run stop at their budget, and the run is graded."""
    from harness.artifacts.readers import SNAPSHOT_MAX
    from harness.grade.core import grade_run
    from harness.trial.snapshots import KEPT_MAX

    cmd = (
        'for i in $(seq 40); do head -c 15000000 /dev/zero | tr "\\0" "$((i % 10))" > app/main.py; done; '
        # truncate(1) opens O_NONBLOCK: refused (EAGAIN) while the watcher holds its read lease
        "python3 -c \"import os; os.truncate('app/main.py', 1000 << 20)\"; exit 0"
    )
    run_dir = tmp_path / "run"
    record = run_agent(project, run_dir, iso, cmd)
    assert record.error is None, record.traceback or record.error
    kept = sum(f.stat().st_blocks * 512 for f in (run_dir / "snapshots").iterdir())
    assert kept <= KEPT_MAX + (1 << 20), f"the snapshots took {kept >> 20} MB"
    rows = [json.loads(line) for line in (run_dir / "snapshots" / "index.jsonl").read_text().splitlines()]
    assert (rows[-1]["bytes"], rows[-1].get("omitted")) == (1000 << 20, f"larger than {SNAPSHOT_MAX:,} bytes")
    assert "snapshot" not in rows[-1]
    assert grade_run(run_dir, project=project).status.value == "graded"
