"""Resource limits: each one stops the command and is reported by limits_hit."""

from __future__ import annotations

import contextlib
import os
import subprocess
import uuid
from pathlib import Path

import pytest

from harness.sandbox.isolation import SandboxLimits, cgroups, limits
from harness.sandbox.isolation.limits import tree_size
from tests.isolation.conftest import Trial

pytestmark = pytest.mark.isolation


def _cgroups_available() -> bool:
    return (
        Path("/sys/fs/cgroup/memory/cgroup.procs").exists()
        and Path("/sys/fs/cgroup/pids/cgroup.procs").exists()
    )


needs_cgroup = pytest.mark.skipif(
    not _cgroups_available(), reason="cgroup v1 memory/pids controllers not mounted"
)


@needs_cgroup
def test_memory_limit_is_hit_and_recorded(trial: Trial) -> None:
    out = trial.py(
        "x = bytearray(400 * 1024 * 1024); x[::4096] = b'1' * len(x[::4096]); print('survived')",
        limits=SandboxLimits(memory_mb=64),
    )
    assert "survived" not in out.stdout
    assert "memory" in out.limits_hit


@needs_cgroup
def test_fork_bomb_is_capped_and_recorded(trial: Trial) -> None:
    code = (
        "import os, time\nkids = 0\nfor _ in range(200):\n    try:\n        pid = os.fork()\n"
        "    except OSError:\n        break\n    if pid == 0:\n        time.sleep(5); os._exit(0)\n    kids += 1\n"
        "print(kids)\n"
    )
    out = trial.py(code, limits=SandboxLimits(pids=20), timeout=30)
    assert int(out.stdout.strip()) < 20
    assert "pids" in out.limits_hit


def test_file_size_limit_is_hit_and_recorded(trial: Trial) -> None:
    out = trial.run(
        trial.spec(
            ["/bin/sh", "-c", "head -c 5000000 /dev/zero > big.bin"], limits=SandboxLimits(file_size_mb=1)
        )
    )
    assert out.returncode != 0
    assert (trial.workspace / "big.bin").stat().st_size == 1024 * 1024
    assert "file_size" in out.limits_hit


def test_cpu_limit_is_hit_and_recorded(trial: Trial) -> None:
    out = trial.py("while True: pass", limits=SandboxLimits(cpu_s=1), timeout=20)
    assert not out.timed_out
    assert "cpu" in out.limits_hit


def test_the_command_runs_under_exactly_the_rlimits_asked_for(trial: Trial) -> None:
    # set by the confining shell's ulimit (file size in 512-byte blocks, CPU soft before hard)
    out = trial.run(trial.spec(["cat", "/proc/self/limits"], limits=SandboxLimits(file_size_mb=3, cpu_s=7)))
    rows = {line[:26].strip(): line[26:].split()[:2] for line in out.stdout.splitlines()[1:]}
    assert rows["Max file size"] == [str(3 * 1024 * 1024)] * 2, out.stdout + out.stderr
    assert rows["Max cpu time"] == ["7", "9"]


def test_one_shell_joins_the_cgroups_and_runs_the_isolations_steps(bwrap_trial: Trial) -> None:
    spec = bwrap_trial.spec(["true"], limits=SandboxLimits(memory_mb=256, pids=64, file_size_mb=3))
    with limits.confine(bwrap_trial.iso, spec, label="test") as box:
        argv = box.argv
    inner = bwrap_trial.iso.wrap(spec)
    if os.geteuid() != 0 or not box.cgroups or inner[:2] != ["/bin/sh", "-c"]:
        pytest.skip("needs a root harness: only then do cgroups and bwrap's own steps both exist")
    assert argv[:2] == ["/bin/sh", "-c"] and argv[3:] == inner[3:]  # no second shell, no prlimit
    joins, steps = argv[2].split("\n", 1)
    assert "cgroup.procs" in joins and "ulimit -f 6144" in joins and steps == inner[2]


def test_filling_the_workspace_is_stopped_and_recorded(trial: Trial) -> None:
    code = (
        "import time\nfor i in range(400):\n    open(f'f{i}.bin', 'wb').write(b'x' * 1024 * 1024)\n"
        "    time.sleep(0.01)\nprint('filled')\n"
    )
    out = trial.py(code, limits=SandboxLimits(workspace_mb=20), timeout=30)
    assert "filled" not in out.stdout
    assert "workspace" in out.limits_hit
    assert tree_size([trial.workspace]) < 200 * 1024 * 1024


def test_no_limits_no_hits(trial: Trial) -> None:
    out = trial.py("print('fine')", limits=SandboxLimits(memory_mb=256, pids=64, file_size_mb=10, cpu_s=30))
    assert out.stdout.strip() == "fine", out.stderr
    assert out.limits_hit == ()


@needs_cgroup
def test_cgroups_are_removed_after_the_run(trial: Trial) -> None:
    """This run's own cgroups: other runs on the machine (parallel tests, other checkouts) have
    theirs under the same parent while they last."""
    out = trial.py("print(1)", limits=SandboxLimits(memory_mb=256, pids=64))
    if not out.cgroups:
        pytest.skip("no cgroups made here (they are made as root only)")
    assert {p.parent.parent.name for p in out.cgroups} == {"memory", "pids"}
    assert [p for p in out.cgroups if p.exists()] == []


@needs_cgroup
def test_a_killed_harness_leaves_no_cgroups_behind(bwrap_trial: Trial) -> None:
    """A harness killed mid-trial cannot remove its cgroups; the next one does, and only those of
    harness processes that are gone (a live one's are its own, even while empty)."""
    gone = subprocess.Popen(["true"])
    gone.wait()
    parent = cgroups.CGROUP_V1 / "memory" / "assay"
    parent.mkdir(exist_ok=True)
    tag = uuid.uuid4().hex[:8]
    orphan, live = parent / f"test-{tag}o-p{gone.pid}", parent / f"test-{tag}l-p{os.getpid()}"
    orphan.mkdir()
    live.mkdir()
    try:
        cgroups._SWEPT.clear()  # as a harness process that has not swept yet
        out = bwrap_trial.py("print(1)", limits=SandboxLimits(memory_mb=256))
        assert out.stdout.strip() == "1", out.stderr
        assert (orphan.exists(), live.exists()) == (False, True)
    finally:
        for path in (orphan, live):
            with contextlib.suppress(OSError):
                path.rmdir()


@pytest.mark.skipif(
    not Path("/sys/fs/cgroup/cpu/cgroup.procs").exists(), reason="cgroup v1 cpu controller not mounted"
)
def test_cpus_is_a_cfs_quota(tmp_path: Path) -> None:
    """A scenario's (or matrix's) `cpus` is a CFS quota on the command's cgroup."""
    import os

    from harness.sandbox.isolation import SandboxSpec, select
    from harness.sandbox.isolation.limits import confine

    if os.geteuid() != 0:
        pytest.skip("cgroups are made as root only")
    spec = SandboxSpec(argv=["true"], cwd=tmp_path, env={}, home=tmp_path, limits=SandboxLimits(cpus=0.5))
    with confine(select("none"), spec, label="test-cpus") as box:
        assert box.enforced["cpus"] == "cgroup"
        assert (box.cgroups["cpu"] / "cpu.cfs_quota_us").read_text().strip() == "50000"
