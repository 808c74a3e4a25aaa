"""The hostile-agent suite, host side: what an agent leaves behind must never act on the host.

Each attack is an agent run by the real runner (`run_trial`) under a real isolation, or a
command in a bare sandbox where the runner adds nothing. The agent tries to become host root
through a setuid shell left for a local user to run, to plant FIFOs, sockets and devices
where the harness reads, and to reach the host's loopback or another host under `network: off`;
the test asserts that it failed on the host and that run.json says what was found. Floods of
the machine's resources are test_iso_hostile_resources.py. Tests named `test_attack_*` are
counted by the suite's summary.
"""

from __future__ import annotations

import os
import socket
import stat
import subprocess
from pathlib import Path

import pytest

from compiler.contract import Canaries, Cell, Limits, Options, Provisions
from harness.trial import run_trial
from tests.helpers import command_agent, make_job
from tests.isolation.conftest import NetnsHost, Trial, run_agent

pytestmark = pytest.mark.isolation

SETUID = stat.S_ISUID | stat.S_ISGID


def _euid_of(shell: Path) -> str:
    """The effective uid a local user (nobody) gets from running `shell -p` (setuid kept)."""
    done = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", str(shell), "-p", "-c", "id -u"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip() or done.stderr.strip()


def _shells(run_dir: Path) -> dict[str, Path]:
    return {
        "workspace": run_dir / "workspace" / "app" / "sh",
        "home": run_dir / "home" / "sh",
        "state": run_dir / "state" / "sh",
        "tmp": run_dir / "tmp" / "sh",
        "run dir": run_dir / "sh",
    }


def test_attack_e2e_leave_setuid_shells_for_a_local_user(project: Path, tmp_path: Path, iso: str) -> None:
    run_dir = tmp_path / "run"
    targets = ("app/sh", "$HOME/sh", "$BENCH_STATE_DIR/sh", "$TMPDIR/sh", "$BENCH_RUN_DIR/sh")
    cmd = "; ".join(f"cp /bin/sh {t} && chmod 6755 {t}" for t in targets) + "; id -u > app/uid; exit 0"
    record = run_agent(project, run_dir, iso, cmd)
    assert record.error is None, record.traceback or record.error
    for where, path in _shells(run_dir).items():
        st = os.lstat(path)
        assert not st.st_mode & SETUID, f"a setuid shell survived in the {where}: {stat.filemode(st.st_mode)}"
        assert st.st_uid != 0 or where == "run dir", f"the shell in the {where} belongs to host root"
    # Run by a local user (-p: keep a setuid shell's privileges), each copy gives that user only.
    assert _euid_of(_shells(run_dir)["workspace"]) == "65534"
    assert record.protections is not None and record.protections.uid_unprivileged
    assert record.protections.sandbox_uid == os.lstat(run_dir / "workspace" / "app" / "uid").st_uid != 0
    assert record.protections.nosuid_nodev and record.protections.setuid_stripped
    assert all(
        record.sandbox_trees[tree].stripped >= 1 for tree in ("workspace", "home", "state", "tmp", "outbox")
    )


def test_attack_sandbox_uid_is_not_host_root(trial: Trial) -> None:
    out = trial.run(trial.spec(["/bin/sh", "-c", "cp /bin/sh sh && chmod 6755 sh && ./sh -p -c 'id -u'"]))
    assert out.returncode == 0, out.stderr
    made = os.lstat(trial.workspace / "sh")
    assert made.st_uid != 0, "a file the sandbox made belongs to host root"
    from harness.sandbox.identity import sandbox_ids

    assert made.st_uid == sandbox_ids().uid
    assert made.st_mode & SETUID == SETUID  # the bits are there (neutralise strips them later)...
    if os.geteuid() == 0:  # ...but to the sandbox's unprivileged uid, which is all running it gives
        assert _euid_of(trial.workspace / "sh") == str(sandbox_ids().uid)


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


# No address off the machine: network off is proven against the host's own loopback.


def test_attack_e2e_reach_a_listener_on_the_host_loopback(project: Path, tmp_path: Path, iso: str) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    cmd = (
        f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 2)\" 2>/dev/null"
        f" && echo reached > app/net.txt; curl -s -m 2 http://127.0.0.1:{port}/ >> app/net.txt; exit 0"
    )
    cell = Cell(
        name="none/none/off",
        levels={"tool": "none", "knowledge": "none", "network": "off"},
        provisions=Provisions(canaries=Canaries(network="off")),
    )
    job = make_job(
        agent=command_agent(cmd),
        cell=cell,
        options=Options(isolation=iso, infra_retries=0),
        limits=Limits(timeout_s=60),
    )
    try:
        record = run_trial(job, project=project, run_dir=tmp_path / "run")
        listener.settimeout(0.2)
        with pytest.raises(TimeoutError):
            listener.accept()
    finally:
        listener.close()
    assert [(c.command, c.ok) for c in record.canaries] == [("network: off", True)], record.canaries
    assert record.invalid is None
    net = tmp_path / "run" / "workspace" / "app" / "net.txt"
    assert not net.exists() or "reached" not in net.read_text()


def test_attack_e2e_reach_a_test_host_in_a_network_namespace(
    project: Path, tmp_path: Path, iso: str, test_host: NetnsHost
) -> None:
    """An address on this machine that is not loopback (a host the test made, behind a veth pair):
    the host reaches it by TCP and UDP, the agent under `network: off` by neither."""
    with socket.create_connection((test_host.address, test_host.tcp_port), 2) as direct:
        assert direct.recv(64) == b"test-host\n"
    probe = (
        "import socket\nres = []\n"
        f"try:\n    socket.create_connection(('{test_host.address}', {test_host.tcp_port}), 2); res.append('tcp')\n"
        "except OSError:\n    pass\n"
        "u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.settimeout(2)\n"
        f"try:\n    u.sendto(b'ping', ('{test_host.address}', {test_host.udp_port})); u.recvfrom(64); res.append('udp')\n"
        "except OSError:\n    pass\n"
        "open('app/net.txt', 'w').write(' '.join(res) or 'blocked')\n"
    )
    (project / "probe.py").write_text(probe)
    cell = Cell(
        name="none/none/off",
        levels={"tool": "none", "knowledge": "none", "network": "off"},
        provisions=Provisions(canaries=Canaries(network="off"), home_files={"probe.py": "probe.py"}),
    )
    job = make_job(
        agent=command_agent("python3 $HOME/probe.py; exit 0"),
        cell=cell,
        options=Options(isolation=iso, infra_retries=0),
        limits=Limits(timeout_s=60),
    )
    record = run_trial(job, project=project, run_dir=tmp_path / "run")
    assert record.error is None and record.invalid is None, record.error or record.invalid
    assert (tmp_path / "run" / "workspace" / "app" / "net.txt").read_text() == "blocked"


def test_network_on_canary_answers_through_the_gateway(project: Path, tmp_path: Path, iso: str) -> None:
    cell = Cell(
        name="none/none/on",
        levels={"tool": "none", "knowledge": "none", "network": "on"},
        provisions=Provisions(network=True, canaries=Canaries(network="on")),
    )
    job = make_job(cell=cell, options=Options(isolation=iso, infra_retries=0), limits=Limits(timeout_s=60))
    record = run_trial(job, project=project, run_dir=tmp_path / "run")
    assert [(c.command, c.ok) for c in record.canaries] == [("network: on", True)], record.canaries
