"""The hostile-agent suite, host side: what an agent leaves behind must never act on the host.

Each attack is an agent run by the real runner (`run_trial`) under a real isolation, or a
command in a bare sandbox where the runner adds nothing. The agent tries to become host root
through a setuid shell left for a local user to run, to plant FIFOs, sockets and devices
where the harness reads, and the test asserts that it failed on the host and that run.json
says what was found. Tests named `test_attack_*` are counted by the suite's summary.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from compiler.contract import Limits, Options
from harness.artifacts.records import RunRecord
from harness.trial import run_trial
from tests.isolation.conftest import Trial, require
from tests.runner.conftest import FIXTURE, command_agent, make_job

pytestmark = pytest.mark.isolation

SETUID = stat.S_ISUID | stat.S_ISGID


@pytest.fixture(params=["bwrap", "unshare"])
def iso(request: pytest.FixtureRequest) -> str:
    require(request.param)
    return str(request.param)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    dest = tmp_path / "project"
    shutil.copytree(FIXTURE, dest, symlinks=True)
    return dest


def _run(project: Path, run_dir: Path, iso: str, command: str) -> RunRecord:
    job = make_job(
        agent=command_agent(command),
        options=Options(isolation=iso, infra_retries=0),
        limits=Limits(timeout_s=60),
    )
    return run_trial(job, project=project, run_dir=run_dir)


def _shells(run_dir: Path) -> dict[str, Path]:
    return {
        "workspace": run_dir / "workspace" / "app" / "sh",
        "home": run_dir / "home" / "sh",
        "state": run_dir / "state" / "sh",
        "run dir": run_dir / "sh",
    }


def test_attack_e2e_leave_setuid_shells_for_a_local_user(project: Path, tmp_path: Path, iso: str) -> None:
    run_dir = tmp_path / "run"
    targets = ("app/sh", "$HOME/sh", "$BENCH_STATE_DIR/sh", "$BENCH_RUN_DIR/sh")
    cmd = "; ".join(f"cp /bin/sh {t} && chmod 6755 {t}" for t in targets) + "; id -u > app/uid; exit 0"
    record = _run(project, run_dir, iso, cmd)
    assert record.error is None, record.traceback or record.error
    for where, path in _shells(run_dir).items():
        st = os.lstat(path)
        assert not st.st_mode & SETUID, f"a setuid shell survived in the {where}: {stat.filemode(st.st_mode)}"
        assert st.st_uid != 0 or where == "run dir", f"the shell in the {where} belongs to host root"
    # Run by a local user (-p: keep a setuid shell's privileges), each copy gives that user only.
    probe = subprocess.run(
        [
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            str(_shells(run_dir)["workspace"]),
            "-p",
            "-c",
            "id -u",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert probe.stdout.strip() == "65534", probe.stderr
    assert record.protections is not None and record.protections.uid_unprivileged
    assert record.protections.sandbox_uid == os.lstat(run_dir / "workspace" / "app" / "uid").st_uid != 0
    assert record.protections.nosuid_nodev and record.protections.setuid_stripped
    assert record.sandbox_trees["workspace"].stripped >= 1 and record.sandbox_trees["home"].stripped >= 1
    assert record.sandbox_trees["outbox"].stripped >= 1


def test_attack_sandbox_uid_is_not_host_root(trial: Trial) -> None:
    out = trial.run(trial.spec(["/bin/sh", "-c", "cp /bin/sh sh && chmod 6755 sh && ./sh -p -c 'id -u'"]))
    assert out.returncode == 0, out.stderr
    made = os.lstat(trial.workspace / "sh")
    assert made.st_uid != 0, "a file the sandbox made belongs to host root"
    from harness.sandbox.identity import sandbox_ids

    assert made.st_uid == sandbox_ids().uid
    assert made.st_mode & SETUID == SETUID  # the bits are there (neutralise strips them later)...
    if os.geteuid() == 0:  # ...but to the sandbox's unprivileged uid, which is all running it gives
        probe = subprocess.run(
            [
                "setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                str(trial.workspace / "sh"),
                "-p",
                "-c",
                "id -u",
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        assert probe.stdout.strip() == str(sandbox_ids().uid), probe.stderr


def test_attack_make_device_nodes_fifos_and_sockets(trial: Trial) -> None:
    code = (
        "import os, socket, stat, json\nres = {}\n"
        "for name, dev in (('null', os.makedev(1, 3)), ('sda', os.makedev(8, 0)), ('mem', os.makedev(1, 1))):\n"
        "    try:\n        os.mknod(name, 0o666 | stat.S_IFCHR, dev); res[name] = 'made'\n"
        "    except OSError as e:\n        res[name] = 'blocked'\n"
        "os.mkfifo('entry.py')\ns = socket.socket(socket.AF_UNIX); s.bind('sock')\n"
        "print(json.dumps(res))\n"
    )
    out = trial.py(code)
    assert out.returncode == 0, out.stderr
    assert set(out.stdout.split('"made"')) == {out.stdout}, out.stdout  # no device node could be made
    from harness.sandbox.neutralise import neutralise

    report = neutralise(trial.workspace)
    assert {(o.path, o.kind) for o in report.odd} == {("entry.py", "fifo"), ("sock", "socket")}
