"""harness.sandbox.proc with real processes: timeouts, the whole tree, output caps, stdin."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from harness.sandbox import proc

ENV = {"PATH": "/usr/bin:/bin"}


def _alive(marker: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmdline:
                pids.append(int(entry.name))
    return pids


def _wait_gone(marker: str, seconds: float = 5.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        left = _alive(marker)
        if not left:
            return []
        time.sleep(0.05)
    return _alive(marker)


def test_stdin_exit_code_and_log(tmp_path: Path) -> None:
    log = tmp_path / "log"
    done = proc.run(
        ["sh", "-c", "cat; echo err >&2; exit 3"], cwd=tmp_path, env=ENV, stdin=b"hello\n", log=log
    )
    assert done.exit_code == 3 and not done.timed_out
    assert log.read_bytes() == b"hello\nerr\n"
    assert done.output_bytes == 10


def test_hung_agent_and_double_forked_grandchild_are_killed(tmp_path: Path) -> None:
    if not proc.pidns_available():
        pytest.skip("pid namespaces unavailable here: the tree kill is not guaranteed (killpg fallback)")
    marker = f"{os.getpid()}{time.monotonic_ns() % 100000}.5"
    # The grandchild double-forks and leaves the session, so a process-group kill cannot reach it.
    script = f"(setsid sh -c 'exec sleep {marker}' &) ; (exec sleep {marker}1) "
    start = time.monotonic()
    done = proc.run(["sh", "-c", script], cwd=tmp_path, env=ENV, timeout_s=1.0)
    assert done.timed_out and done.exit_code is None
    assert time.monotonic() - start < 15
    assert done.tree_kill == "pidns"
    assert _wait_gone(marker) == []


def test_output_cap_ends_the_command(tmp_path: Path) -> None:
    log = tmp_path / "log"
    done = proc.run(["sh", "-c", "yes"], cwd=tmp_path, env=ENV, log=log, output_cap=100_000, timeout_s=20)
    assert done.output_capped and done.exit_code is None
    assert log.stat().st_size == 100_000


def test_read_only_bind_cannot_be_written_through(tmp_path: Path) -> None:
    if not proc.pidns_available():
        pytest.skip("mount namespaces unavailable here")
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.md").write_text("orig\n")
    target = tmp_path / "ws" / "wiki"
    target.mkdir(parents=True)
    done = proc.run(
        ["sh", "-c", "cat wiki/a.md; echo new > wiki/a.md; echo x > wiki/b.md; rm -f wiki/a.md; exit 0"],
        cwd=tmp_path / "ws",
        env=ENV,
        ro_binds=[(src, target)],
        capture=True,
    )
    assert done.exit_code == 0
    assert b"orig" in done.output and b"Read-only file system" in done.output
    assert (src / "a.md").read_text() == "orig\n" and not (src / "b.md").exists()


def test_network_off_has_no_route(tmp_path: Path) -> None:
    if not proc.pidns_available():
        pytest.skip("network namespaces unavailable here")
    done = proc.run(["sh", "-c", "cat /proc/net/dev"], cwd=tmp_path, env=ENV, network=False, capture=True)
    interfaces = [line.split(":")[0].strip() for line in done.output.decode().splitlines()[2:]]
    assert interfaces == ["lo"]


@pytest.mark.isolation
def test_a_sandboxed_command_may_reopen_its_own_stdin_and_stdout(tmp_path: Path) -> None:
    """Its pipes belong to the sandbox's uid: `> /dev/stdout` and pytest's `--junitxml=/dev/fd/3` work."""
    from harness.sandbox.isolation import SandboxSpec, select

    iso = select("bwrap")
    if iso.probe() is not None:
        pytest.skip(f"bwrap unavailable: {iso.probe()}")
    spec = SandboxSpec(
        argv=["/bin/sh", "-c", "cat /dev/stdin > /dev/stdout; echo err > /dev/stderr"],
        cwd=Path("/"),
        env={"PATH": "/usr/bin:/bin"},
        home=tmp_path,
    )
    done = proc.run(iso.wrap(spec), cwd=tmp_path, env=spec.env, stdin=b"in\n", capture=True)
    assert done.exit_code == 0 and done.output == b"in\nerr\n", done.output
