"""The bwrap and unshare plug-ins, run directly: what the sandbox sees and can do."""

from __future__ import annotations

import http.server
import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.sandbox.identity import hand_over, sandbox_ids
from harness.sandbox.isolation import REGISTRY, Mount, Overlay, SandboxSpec, select
from harness.sandbox.isolation.bwrap import BwrapIsolation
from tests.isolation.conftest import Trial, require

pytestmark = pytest.mark.isolation


def test_registry_lists_all_three_and_auto_prefers_bwrap() -> None:
    assert {"bwrap", "unshare", "none"} <= set(REGISTRY)
    require("bwrap")
    assert select("auto").name == "bwrap"
    assert select("bwrap").enforces_network_off and select("unshare").enforces_network_off
    assert not select("none").enforces_network_off


def test_bwrap_argv_carries_the_safe_flags() -> None:
    spec = SandboxSpec(argv=["true"], cwd=Path("/w"), env={"SECRET": "s3cret"}, home=Path("/h"))
    argv = BwrapIsolation().wrap(spec)
    ids = sandbox_ids()
    common = ("--unshare-pid", "--unshare-net", "--cap-drop", "--new-session", "--die-with-parent")
    if os.geteuid() == 0:  # no user namespace: setpriv leaves root before the command runs
        wanted = (*common, f"--reuid={ids.uid}", f"--regid={ids.gid}", "--clear-groups", "--no-new-privs")
        assert "--unshare-user" not in argv and ids.uid != 0
    else:
        wanted = ("--unshare-all", "--unshare-user", "--disable-userns", "--uid")
    for flag in wanted:
        assert flag in argv
    assert "--share-net" not in argv
    assert "s3cret" not in " ".join(argv), "environment must not travel on the command line"


PROJECT = Path(__file__).resolve().parents[2]
"""This checkout: its interpreter may be inside it (.venv, .nox), its files must stay unseen."""


def test_sees_only_its_workspace_and_toolchain(trial: Trial) -> None:
    (trial.workspace / "seed.txt").write_text("seed")
    (trial.root / "run" / "run.json").write_text("{}")
    out = trial.py(
        "import os, json; print(json.dumps({'root': sorted(os.listdir('/')), 'ws': sorted(os.listdir('.')),"
        f" 'run': os.path.exists({str(trial.root / 'run' / 'run.json')!r}),"
        f" 'shadow': os.path.exists('/etc/shadow'), 'proj': os.path.exists({str(PROJECT / 'pyproject.toml')!r}),"
        " 'ssh': os.path.exists('/root/.ssh'), 'env': dict(os.environ)}))"
    )
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout)
    assert seen["ws"] == ["seed.txt"]
    assert not seen["run"] and not seen["shadow"] and not seen["proj"] and not seen["ssh"]
    assert "home" not in seen["root"] and "farm" not in seen["root"]
    assert set(seen["env"]) <= {"HOME", "PATH", "LANG", "PWD", "OLDPWD", "SHLVL", "_", "LC_CTYPE"}


def test_the_sandbox_user_has_a_name_from_the_files_alone(trial: Trial) -> None:
    out = trial.py(
        "import os, pwd, grp; me = pwd.getpwuid(os.getuid());"
        " print(me.pw_name, grp.getgrgid(os.getgid()).gr_name, me.pw_dir);"
        " print([l for l in open('/etc/nsswitch.conf') if l.startswith(('passwd', 'group'))])"
    )
    assert out.returncode == 0, out.stderr
    names, sources = out.stdout.splitlines()
    assert len(names.split()) == 3
    # its own /etc: users and groups from the snapshot's files, no daemon asked
    assert sources == "['passwd: files\\n', 'group: files\\n']", sources


def test_writes_land_in_workspace_and_toolchain_is_read_only(trial: Trial) -> None:
    out = trial.run(
        trial.spec(["/bin/sh", "-c", "echo hi > out.txt && (echo x > /usr/evil 2>/dev/null; echo $?)"])
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() != "0"
    assert (trial.workspace / "out.txt").read_text() == "hi\n"
    assert not Path("/usr/evil").exists()


def test_private_tmp(trial: Trial, tmp_path: Path) -> None:
    marker = Path("/tmp") / f"assay-host-marker-{os.getpid()}"
    marker.write_text("host")
    try:
        out = trial.py(
            f"import os; print(os.path.exists({str(marker)!r})); open('/tmp/inside','w').write('x')"
        )
    finally:
        marker.unlink()
    assert out.stdout.strip() == "False", out.stderr
    assert not Path("/tmp/inside").exists()


def test_proc_sys_is_read_only(trial: Trial) -> None:
    out = trial.run(trial.spec(["/bin/sh", "-c", "echo core > /proc/sys/kernel/core_pattern"]))
    assert out.returncode != 0
    assert "Read-only" in out.stderr


@pytest.fixture
def loopback_server() -> Iterator[int]:
    class Quiet(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"host-secret")

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield int(server.server_address[1])
    server.shutdown()
    server.server_close()


def _connect(port: int, host: str = "127.0.0.1") -> str:
    return (
        "import socket\ns = socket.socket(); s.settimeout(2)\n"
        f"try:\n    s.connect(({host!r}, {port})); print('reached')\n"
        "except OSError as e:\n    print('blocked', e)\n"
    )


def test_network_off_blocks_host_loopback(trial: Trial, loopback_server: int) -> None:
    out = trial.py(_connect(loopback_server))
    assert out.stdout.startswith("blocked"), out.stdout + out.stderr


def test_network_on_reaches_host_loopback(trial: Trial, loopback_server: int) -> None:
    out = trial.py(_connect(loopback_server), network=True)
    assert out.stdout.startswith("reached"), out.stdout + out.stderr


def test_background_process_dies_with_the_sandbox(trial: Trial) -> None:
    marker = trial.workspace / "late.txt"
    # double fork + setsid: a process-group kill would miss it, the pid namespace does not
    code = (
        "import os, time\n"
        "if os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
        f"        time.sleep(1.5); open({str(marker)!r}, 'w').write('alive')\n    os._exit(0)\n"
        "print('parent done')\n"
    )
    out = trial.py(code)
    assert out.returncode == 0
    time.sleep(2.5)
    assert not marker.exists(), "a background process outlived the sandbox"


def test_cannot_see_or_signal_host_processes(trial: Trial) -> None:
    out = trial.py(
        f"import os\ntry:\n    os.kill({os.getpid()}, 0); print('visible')\nexcept OSError:\n    print('hidden')"
    )
    assert out.stdout.strip() == "hidden"
    out = trial.py("import os; print(len([p for p in os.listdir('/proc') if p.isdigit()]))")
    assert int(out.stdout) <= 3


def test_overlay_leaves_the_seed_untouched(trial: Trial, tmp_path: Path) -> None:
    seed = tmp_path / "seed"
    (seed / "sub").mkdir(parents=True)
    (seed / "a.txt").write_text("seed")
    hand_over(seed)  # the agent changes lower files: under a root harness they must be its uid's
    upper, work = tmp_path / "upper", tmp_path / "work"
    upper.mkdir()
    work.mkdir()
    dest = trial.root / "run" / "overlaid"
    spec = trial.spec(["/bin/sh", "-c", f"cd {dest} && cat a.txt && echo new > a.txt && echo b > sub/b.txt"])
    spec = SandboxSpec(**{**spec.__dict__, "overlays": (Overlay(seed, upper, work, dest),)})
    out = trial.run(spec)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "seed"
    assert (seed / "a.txt").read_text() == "seed" and not (seed / "sub" / "b.txt").exists()
    assert (upper / "a.txt").read_text() == "new\n" and (upper / "sub" / "b.txt").exists()


def test_socket_in_bound_folder_is_reachable_so_only_gateway_dirs_are_bound(
    trial: Trial, tmp_path: Path
) -> None:
    # The fact behind the rule: a Unix socket in a bound folder crosses --unshare-net.
    sock_dir = tmp_path / "gw"
    sock_dir.mkdir()
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(sock_dir / "s"))
    (sock_dir / "s").chmod(0o666)  # as the gateway's: the sandbox's uid is not the harness's
    listener.listen(1)
    try:
        out = trial.py(
            f"import socket; s = socket.socket(socket.AF_UNIX); s.connect({str(sock_dir / 's')!r}); print('ok')",
            mounts=(Mount(sock_dir, sock_dir),),
        )
    finally:
        listener.close()
    assert out.stdout.strip() == "ok", out.stderr


def test_overlay_changes_and_materialize(trial: Trial, tmp_path: Path) -> None:
    from harness.sandbox.isolation import overlay

    seed = tmp_path / "seed2"
    (seed / "keep").mkdir(parents=True)
    (seed / "gone").mkdir()
    (seed / "a.txt").write_text("a")
    (seed / "b.txt").write_text("b")
    (seed / "keep" / "k.txt").write_text("k")
    (seed / "gone" / "g.txt").write_text("g")
    hand_over(seed)
    ov = overlay.prepare(seed, tmp_path / "scratch", trial.root / "run" / "ws2")
    spec = trial.spec(
        ["/bin/sh", "-c", f"cd {ov.dest} && echo A > a.txt && rm b.txt && rm -r gone && echo n > keep/n.txt"]
    )
    out = trial.run(SandboxSpec(**{**spec.__dict__, "overlays": (ov,)}))
    assert out.returncode == 0, out.stderr
    found = overlay.changes(ov.upper)
    assert set(found.written) == {"a.txt", "keep/n.txt"}
    assert set(found.deleted) == {"b.txt", "gone"}
    merged = tmp_path / "merged"
    overlay.materialize(seed, ov.upper, merged)
    files = sorted(p.relative_to(merged).as_posix() for p in merged.rglob("*") if p.is_file())
    assert files == ["a.txt", "keep/k.txt", "keep/n.txt"]
    assert (merged / "a.txt").read_text() == "A\n"
