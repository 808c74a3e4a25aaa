"""Check commands confined like the agent: the check runner's own code path, a real sandbox."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from compiler.contract import CheckSpec
from harness.checks import CheckContext, batching, run_checks
from harness.sandbox.isolation import confines
from harness.sandbox.isolation.checks import check_wrapper
from tests.isolation.conftest import ISOLATIONS, require

pytestmark = pytest.mark.isolation


@pytest.mark.parametrize("name", ISOLATIONS)
def test_checks_run_confined(tmp_path: Path, name: str) -> None:
    iso = require(name)
    secret = tmp_path / "project" / "reference" / "SECRET.txt"
    secret.parent.mkdir(parents=True)
    secret.write_text("ANSWER")
    ws = tmp_path / "scratch" / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "app.py").write_text("print('ok')\n")
    (ws / "sub" / "marker").write_text("here")
    wrap = check_wrapper(iso, home=tmp_path / "scratch" / "home")
    assert wrap is not None
    listener = socket.create_server(("127.0.0.1", 0))  # on the host's loopback: the check must not reach it
    port = listener.getsockname()[1]
    checks = (
        CheckSpec(id="runs", kind="command", params={"run": "python3 app.py && touch made.txt"}),
        CheckSpec(id="subdir", kind="command", params={"run": "test -f marker", "cwd": "sub"}),
        CheckSpec(id="no_secret", kind="command", params={"run": f"cat {secret}", "exit": 1}),
        CheckSpec(
            id="no_net",
            kind="command",
            params={
                "run": f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 2)\"",
                "exit": 1,
            },
        ),
        CheckSpec(id="home", kind="command", params={"run": f'test "$HOME" = "{tmp_path}/scratch/home"'}),
    )
    try:
        outcomes = run_checks(checks, ws, CheckContext(env={"PATH": "/usr/bin:/bin"}, wrap=wrap))
    finally:
        listener.close()
    assert {o.id: o.outcome for o in outcomes} == {k.id: "pass" for k in checks}, [
        o.message for o in outcomes
    ]
    assert (ws / "made.txt").exists()


def test_none_gives_no_wrapper(tmp_path: Path) -> None:
    from harness.sandbox.isolation import select

    assert check_wrapper(select("none"), home=tmp_path / "h") is None


@pytest.mark.parametrize("name", ISOLATIONS)
def test_checks_in_one_launch_leave_nothing_to_each_other(tmp_path: Path, name: str) -> None:
    iso = require(name)
    ws = tmp_path / "scratch" / "ws"
    ws.mkdir(parents=True)
    (ws / "app.py").write_text("VALUE = 1\n")
    wrap = check_wrapper(iso, home=tmp_path / "scratch" / "home")
    ctx = CheckContext(env={"PATH": "/usr/bin:/bin"}, wrap=wrap, sandboxed=confines(iso))
    left = "app.py planted $HOME/dotfile /tmp/t /dev/shm/s /var/tmp/v"
    checks = (
        CheckSpec(
            id="leaky",
            kind="command",
            params={
                "run": f"echo changed > app.py; touch {left.split(' ', 1)[1]}; (sleep 300 &); "
                "ipcmk -M 4096 && ipcmk -Q && ipcmk -S 1"
            },
        ),
        CheckSpec(
            id="clean",
            kind="command",
            params={
                "run": "grep -qx 'VALUE = 1' app.py && ! ls -d "
                + left.split(" ", 1)[1]
                + " && ! pgrep -x sleep"
                # nor System V IPC objects: shared memory, message queues, semaphores
                + " && for t in shm msg sem; do [ $(wc -l < /proc/sysvipc/$t) = 1 ] || exit 1; done"
            },
        ),
        # the server is not dumpable: a command cannot reach its descriptors, memory or environment
        CheckSpec(
            id="server-closed",
            kind="command",
            params={"run": "! ls /proc/$PPID/fd && ! cat /proc/$PPID/environ"},
        ),
        CheckSpec(id="kills-server", kind="command", params={"run": "kill -9 $PPID; true"}),
        CheckSpec(id="after", kind="command", params={"run": "grep -qx 'VALUE = 1' app.py"}),
    )
    assert sorted(batching.prerun(checks[:3], ws, ctx)) == [0, 1, 2]  # they do share a launch
    outcomes = run_checks(checks, ws, ctx)
    assert {o.id: o.outcome for o in outcomes} == {k.id: "pass" for k in checks}, [
        o.message for o in outcomes
    ]
    assert (ws / "app.py").read_text() == "VALUE = 1\n" and not (ws / "planted").exists()
