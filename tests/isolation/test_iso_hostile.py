"""The hostile-agent suite, unit layer: each attack a scripted agent, run by a real isolation.

The agent knows every host path (the worst case) and tries its attack; each test asserts
the attack failed on the host and, where a limit stopped it, that the limit is reported.
Tests named `test_attack_*` are counted by the suite's summary (tried / blocked).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.sandbox.isolation import SandboxLimits
from harness.sandbox.isolation.limits import confine
from harness.sandbox.pathsafe import PathEscape, copy_tree, read_inside, write_inside
from tests.isolation.conftest import PYTHON, NetnsHost, Trial

pytestmark = pytest.mark.isolation


@dataclass(frozen=True)
class HostFiles:
    """What lies around a trial on the host: the scenario's secrets and the run's records."""

    reference: Path
    grader: Path
    negative: Path
    git: Path
    run_json: Path
    grade_json: Path


@pytest.fixture
def host(trial: Trial) -> HostFiles:
    scen = trial.root / "project" / "scenarios" / "s1"
    for sub in ("reference", "grader", "negatives/n1"):
        (scen / sub).mkdir(parents=True)
    p = HostFiles(
        reference=scen / "reference" / "solution.py",
        grader=scen / "grader" / "test_hidden.py",
        negative=scen / "negatives" / "n1" / "broken.py",
        git=trial.root / "project" / ".git" / "config",
        run_json=trial.root / "run" / "run.json",
        grade_json=trial.root / "run" / "grade.json",
    )
    p.git.parent.mkdir(parents=True)
    for path, text in (
        (p.reference, "THE ANSWER"),
        (p.grader, "assert hidden"),
        (p.negative, "broken"),
        (p.git, "[core]"),
        (p.run_json, '{"exit_code": 0}'),
        (p.grade_json, '{"passed": false}'),
    ):
        path.write_text(text)
    return p


def _try_all(paths: list[Path], action: str) -> str:
    """Python that tries `action` ('read' or 'write') on each path, and also by climbing from cwd."""
    return (
        "import os, json\nres = {}\n"
        f"for p in {[str(x) for x in paths]!r}:\n"
        "    rel = os.path.relpath(p)\n"
        "    for q in (p, rel):\n"
        "        try:\n"
        f"            if {action!r} == 'read':\n"
        "                res[q] = open(q).read()\n"
        "            else:\n"
        "                open(q, 'w').write('{\"passed\": true}'); res[q] = 'written'\n"
        "        except OSError as e:\n"
        "            res[q] = 'blocked: ' + e.strerror\n"
        "print(json.dumps(res))\n"
    )


def _blocked(out_stdout: str) -> bool:
    return all(v.startswith("blocked") for v in json.loads(out_stdout).values())


def test_attack_read_reference_negatives_grader_and_git(trial: Trial, host: HostFiles) -> None:
    out = trial.py(_try_all([host.reference, host.negative, host.grader, host.git], "read"))
    assert out.returncode == 0, out.stderr
    assert _blocked(out.stdout), out.stdout


def test_attack_read_run_and_grade_records(trial: Trial, host: HostFiles) -> None:
    out = trial.py(_try_all([host.run_json, host.grade_json], "read"))
    assert _blocked(out.stdout), out.stdout


def test_attack_write_run_and_grade_records(trial: Trial, host: HostFiles) -> None:
    trial.py(_try_all([host.run_json, host.grade_json], "write"))
    assert host.run_json.read_text() == '{"exit_code": 0}'
    assert host.grade_json.read_text() == '{"passed": false}'


def test_attack_edit_hidden_grader_files(trial: Trial, host: HostFiles) -> None:
    trial.py(_try_all([host.grader, host.reference], "write"))
    assert host.grader.read_text() == "assert hidden"
    assert host.reference.read_text() == "THE ANSWER"


def test_attack_escape_writable_through_a_symlink(trial: Trial, host: HostFiles) -> None:
    links = {
        "answer.json": host.reference,
        "run_link": host.run_json,
        "shadow": Path("/etc/shadow"),
        "grader_dir": host.grader.parent,
    }
    script = "; ".join(f"ln -s {target} {name}" for name, target in links.items())
    script += "; echo pwned > run_link; echo pwned > grader_dir/test_hidden.py; cat answer.json shadow; true"
    out = trial.run(trial.spec(["/bin/sh", "-c", script]))
    assert "THE ANSWER" not in out.stdout and "root:" not in out.stdout
    assert host.run_json.read_text() == '{"exit_code": 0}' and host.grader.read_text() == "assert hidden"
    # After the agent: the harness's own copying and reading never follows those links.
    snapshot = trial.root / "run" / "snapshot"
    copy_tree(trial.workspace, snapshot)
    leaked = b"".join(p.read_bytes() for p in snapshot.rglob("*") if p.is_file() and not p.is_symlink())
    assert b"THE ANSWER" not in leaked and b"root:" not in leaked
    for name in links:
        with pytest.raises(PathEscape):
            read_inside(trial.workspace, name)
    with pytest.raises(PathEscape):
        write_inside(trial.workspace, "grader_dir/test_hidden.py", b"x")


def test_attack_read_host_home_and_harness_environment(trial: Trial, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSAY_HARNESS_SECRET", "harness-secret-value")
    code = (
        "import os, glob, json\nleaks = []\n"
        "for f in glob.glob('/proc/*/environ'):\n"
        "    try:\n        leaks.append(open(f, 'rb').read().decode(errors='replace'))\n"
        "    except OSError:\n        pass\n"
        "leaks.append(json.dumps(dict(os.environ)))\n"
        "homes = {h: sorted(os.listdir(h)) for h in ('/root', '/home') if os.path.isdir(h)}\n"
        "print(json.dumps({'env': '\\n'.join(leaks), 'homes': homes,"
        " 'ssh': [p for p in ('/root/.ssh', '/root/.aws', '/root/.config') if os.path.exists(p)]}))\n"
    )
    out = trial.py(code)
    seen = json.loads(out.stdout)
    assert "harness-secret-value" not in seen["env"]
    assert seen["ssh"] == []
    assert set(seen["homes"].get("/root", [])) <= {".pyenv"}  # only the interpreter, read-only
    assert "/home" not in seen["homes"] or seen["homes"]["/home"] == []


_REACH = (
    "import socket, json, sys\nres = {}\n"
    "for name, host, port in json.loads(sys.argv[1]):\n"
    "    s = socket.socket(); s.settimeout(2)\n"
    "    try:\n        s.connect((host, port)); res[name] = 'reached'\n"
    "    except OSError:\n        res[name] = 'blocked'\n"
    "    s.close()\n"
    "for name, host, port in json.loads(sys.argv[2]):\n"
    "    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.settimeout(2)\n"
    "    try:\n        u.sendto(b'ping', (host, port)); u.recvfrom(64); res[name] = 'reached'\n"
    "    except OSError:\n        res[name] = 'blocked'\n"
    "print(json.dumps(res))\n"
)


def _reach(trial: Trial, tcp: list[tuple[str, str, int]], udp: list[tuple[str, str, int]]) -> dict[str, str]:
    out = trial.run(trial.spec([PYTHON, "-c", _REACH, json.dumps(tcp), json.dumps(udp)]))
    assert out.returncode == 0, out.stderr
    result: dict[str, str] = json.loads(out.stdout)
    return result


def test_attack_reach_a_listener_on_the_host_loopback(trial: Trial) -> None:
    import socket as _socket

    listener = _socket.create_server(("127.0.0.1", 0))
    try:
        seen = _reach(trial, [("loopback", "127.0.0.1", listener.getsockname()[1])], [])
        listener.settimeout(0.5)
        with pytest.raises(TimeoutError):
            listener.accept()  # nothing arrived, whatever the probe said
    finally:
        listener.close()
    assert seen == {"loopback": "blocked"}


def test_attack_reach_another_host_by_tcp_and_udp(trial: Trial, test_host: NetnsHost) -> None:
    import socket as _socket

    # From the host the test host answers: a "blocked" below is the sandbox's doing.
    with _socket.create_connection((test_host.address, test_host.tcp_port), 2) as direct:
        assert direct.recv(64) == b"test-host\n"
    seen = _reach(
        trial,
        [("tcp", test_host.address, test_host.tcp_port)],
        [("udp", test_host.address, test_host.udp_port)],
    )
    assert seen == {"tcp": "blocked", "udp": "blocked"}


def test_attack_leave_a_background_process_running(trial: Trial) -> None:
    tag = f"assay-lurker-{os.getpid()}-{time.monotonic_ns()}"
    script = f"(setsid nohup sh -c 'exec -a {tag} sleep 30' >/dev/null 2>&1 &); (sleep 30 &); echo started"
    out = trial.run(trial.spec(["/bin/sh", "-c", script]))
    assert out.stdout.strip() == "started"
    time.sleep(0.5)
    alive = subprocess.run(["pgrep", "-f", tag], capture_output=True, text=True).stdout.split()
    assert alive == [], f"background process survived the sandbox: {alive}"


def test_attack_fork_bomb(trial: Trial) -> None:
    started = time.monotonic()
    out = trial.run(
        trial.spec(
            ["/bin/sh", "-c", "b() { b | b & }; b; sleep 3; echo done"],
            limits=SandboxLimits(pids=64, memory_mb=512),
        ),
        timeout=20,
    )
    assert time.monotonic() - started < 20 and not out.timed_out
    assert "pids" in out.limits_hit


def test_attack_fill_the_disk(trial: Trial) -> None:
    code = (
        "import os\ntmp = 'tmp ok'\n"
        "try:\n    open('/tmp/big', 'wb').write(b'x' * 64 * 1024 * 1024)\n"
        "except OSError as e:\n    tmp = 'tmp blocked'\nprint(tmp, flush=True)\n"
        "i = 0\nwhile True:\n    open(f'fill{i}', 'wb').write(b'x' * 4 * 1024 * 1024); i += 1\n"
    )
    out = trial.py(code, limits=SandboxLimits(workspace_mb=40, file_size_mb=8, tmp_mb=16), timeout=30)
    assert out.stdout.startswith("tmp blocked")
    assert "workspace" in out.limits_hit
    assert not out.timed_out


def test_attack_flood_stdout(trial: Trial) -> None:
    cap = 1_000_000
    spec = trial.spec([PYTHON, "-c", "import sys\nwhile True: sys.stdout.write('x' * 65536)"])
    with confine(trial.iso, spec, label="flood") as box:
        proc = subprocess.Popen(box.argv, env=dict(spec.env), stdout=subprocess.PIPE, start_new_session=True)
        assert proc.stdout is not None
        taken = 0
        while taken < cap:
            chunk = proc.stdout.read(65536)
            assert chunk, "the sandboxed flood ended before the cap: it did not start"
            taken += len(chunk)
        os.killpg(proc.pid, signal.SIGKILL)  # the runner's output cap does exactly this
        proc.stdout.close()
        assert proc.wait(timeout=10) != 0
        deadline = time.monotonic() + 5  # the sandbox's init dies of --die-with-parent, promptly
        while box.pids() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert box.pids() == []


def test_attack_kill_the_harness(trial: Trial) -> None:
    bystander = subprocess.Popen(["sleep", "30"])
    try:
        code = (
            "import os, signal\n"
            f"for pid in ({os.getpid()}, {bystander.pid}, 1):\n"
            "    try:\n        os.kill(pid, signal.SIGKILL)\n    except OSError:\n        pass\n"
            "try:\n    os.kill(-1, signal.SIGKILL)\nexcept OSError:\n    pass\n"
        )
        trial.py(code)
        time.sleep(0.2)
        assert bystander.poll() is None, "a host process was killed from inside the sandbox"
    finally:
        bystander.kill()
        bystander.wait()


def test_attack_write_host_sysctl_and_enter_host_namespaces(trial: Trial) -> None:
    before = Path("/proc/sys/kernel/core_pattern").read_text()
    script = (
        "echo '|/bin/sh -c id' > /proc/sys/kernel/core_pattern; "
        "nsenter -t 1 -m -u -n -p true 2>/dev/null && echo entered; "
        "unshare -U -r true 2>/dev/null && echo userns; true"
    )
    out = trial.run(trial.spec(["/bin/sh", "-c", script]))
    assert Path("/proc/sys/kernel/core_pattern").read_text() == before
    assert "entered" not in out.stdout
    if trial.iso.name == "bwrap":
        assert "userns" not in out.stdout
