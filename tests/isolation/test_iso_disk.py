"""The size-limited filesystems of a trial (`harness.sandbox.disk`): real tmpfs mounts, real copies.

A root harness puts the agent's folders on a tmpfs of the size limit; these tests mount one in
a temporary run directory, write into it what a hostile agent would, and check that the limit
is the kernel's, that the copy-out keeps every entry as it was (and never more bytes than the
filesystem held), and that nothing stays mounted, also after the harness was killed.
"""

from __future__ import annotations

import os
import signal
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from harness.sandbox import disk, fdtree
from harness.sandbox.neutralise import remove_tree

pytestmark = [
    pytest.mark.isolation,
    pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs a root harness"),
]
MIB = 1024 * 1024
ROOT = Path(__file__).resolve().parents[2]


def _folders(run: Path) -> list[Path]:
    return [run / name for name in ("workspace", "home", "tmp", "state")]


def _mounts(folder: Path) -> list[str]:
    return [line for line in Path("/proc/self/mountinfo").read_text().splitlines() if f" {folder}/" in line]


@pytest.fixture
def run(tmp_path: Path) -> Path:
    folder = tmp_path / "run"
    folder.mkdir()
    return folder


def test_the_kernel_keeps_the_limit_and_close_leaves_plain_folders(run: Path) -> None:
    made = disk.mount(run, _folders(run), size_mb=8, outbox=run / ".sandbox-out", outbox_mb=2)
    try:
        lines = _mounts(run)
        assert len(lines) == 6, lines  # one tmpfs, four binds of it, the outbox's tmpfs
        assert all(
            "nosuid" in line and "nodev" in line and f"{disk.SOURCE}-p{os.getpid()}" in line for line in lines
        )
        (run / "workspace" / "kept.txt").write_text("kept")
        fd = os.open(run / "tmp" / "fill", os.O_WRONLY | os.O_CREAT, 0o644)
        with pytest.raises(OSError) as refused:
            while True:  # tmp, home, state and the workspace share the one limit of 8 MB
                os.write(fd, b"x" * MIB)
        os.close(fd)
        assert refused.value.errno == 28  # ENOSPC
        assert disk.full(run / "workspace") and not disk.full(run / ".sandbox-out")
    finally:
        assert made.close() is None
    assert _mounts(run) == [] and not (run / ".disk").exists()
    assert (run / "workspace" / "kept.txt").read_text() == "kept"
    assert os.stat(run / "workspace").st_dev == os.stat(run).st_dev  # the run directory's own disk
    assert 7 * MIB < (run / "tmp" / "fill").stat().st_size <= 8 * MIB


def test_copy_out_keeps_every_entry_as_the_agent_left_it(run: Path) -> None:
    made = disk.mount(run, _folders(run), size_mb=64, outbox=None, outbox_mb=None)
    ws = run / "workspace"
    try:
        os.mkfifo(ws / "entry.py")
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind(str(ws / "sock"))
        (ws / "new\nline").write_text("x")
        (ws / os.fsdecode(b"bad\xff\x1b[31m")).write_text("y")
        (ws / "app").mkdir()
        (ws / "app" / "main.py").write_text("print(1)\n")
        os.utime(ws / "app" / "main.py", ns=(1_000_000_000, 2_000_000_000))
        os.chown(ws / "app" / "main.py", 65533, 65533)
        os.link(ws / "app" / "main.py", ws / "hard")
        (ws / "suid").write_bytes(b"#!/bin/sh\n")
        os.chmod(ws / "suid", 0o6755)
        with (ws / "sparse").open("wb") as fh:
            fh.truncate(1 << 30)
            fh.seek(1 << 29)
            fh.write(b"middle")
        os.symlink("/etc/shadow", ws / "link")
        fd = os.open(ws, os.O_RDONLY)
        for _ in range(3000):  # 6,000 bytes of path: past PATH_MAX
            os.mkdir("d", dir_fd=fd)
            deeper = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = deeper
        os.close(os.open("deep.txt", os.O_CREAT | os.O_WRONLY, dir_fd=fd))
        os.close(fd)
    finally:
        assert made.close() is None, made.skipped
    assert made.skipped == []
    kinds = {name: stat.S_IFMT(os.lstat(ws / name).st_mode) for name in ("entry.py", "sock", "link", "hard")}
    assert kinds == {
        "entry.py": stat.S_IFIFO,
        "sock": stat.S_IFSOCK,
        "link": stat.S_IFLNK,
        "hard": stat.S_IFREG,
    }
    assert os.readlink(ws / "link") == "/etc/shadow"
    assert (ws / "new\nline").read_text() == "x" and (ws / os.fsdecode(b"bad\xff\x1b[31m")).read_text() == "y"
    main = os.stat(ws / "app" / "main.py")
    assert (main.st_mtime_ns, main.st_uid, main.st_nlink) == (2_000_000_000, 65533, 2)
    assert os.stat(ws / "hard").st_ino == main.st_ino
    assert stat.S_IMODE(os.stat(ws / "suid").st_mode) == 0o755  # setuid and setgid never copied
    sparse = os.stat(ws / "sparse")
    assert sparse.st_size == 1 << 30 and sparse.st_blocks * 512 < MIB  # the holes stay holes
    with (ws / "sparse").open("rb") as fh:
        fh.seek(1 << 29)
        assert fh.read(6) == b"middle"
    fd = os.open(ws, os.O_RDONLY)
    for _ in range(3000):
        deeper = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = deeper
    assert os.listdir(fd) == ["deep.txt"]
    os.close(fd)
    remove_tree(ws / "d")  # deeper than pytest's own clean-up can go


def test_copy_out_never_writes_more_than_the_filesystem_held(tmp_path: Path, run: Path) -> None:
    made = disk.mount(run, _folders(run), size_mb=8, outbox=None, outbox_mb=None)
    try:
        (run / "workspace" / "a").write_bytes(b"a" * 3 * MIB)
        (run / "workspace" / "b").write_bytes(b"b" * 3 * MIB)
        for i in range(200):  # 600 MB if each link were copied as a file of its own
            os.link(run / "workspace" / "a", run / "workspace" / f"a{i:03d}")
        dest = tmp_path / "out"
        dest.mkdir()
        left = [4 * MIB]
        skipped = fdtree.mirror_tree(run / "workspace", dest, left)
    finally:
        made.close()
    assert skipped == ["b (over the size limit when copied out)"]
    assert os.stat(dest / "a").st_nlink == 201 and not (dest / "b").exists()
    assert left == [MIB]


def test_a_killed_harness_leaves_mounts_the_next_one_removes(run: Path) -> None:
    code = (
        "import sys; from pathlib import Path; from harness.sandbox import disk\n"
        f"run = Path({str(run)!r})\n"
        "disk.mount(run, [run / n for n in ('workspace', 'home', 'tmp', 'state')], size_mb=4,"
        " outbox=run / '.sandbox-out', outbox_mb=1)\n"
        "print('mounted', flush=True); sys.stdin.read()\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", code], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None and child.stdout.readline() == "mounted\n"
    child.send_signal(signal.SIGKILL)
    child.communicate()
    assert len(_mounts(run)) == 6  # SIGKILL: nothing of the harness ran to unmount them
    swept = disk.sweep()
    assert len(swept) == 6 and _mounts(run) == []
    assert disk.sweep() == []  # mounts of a live harness (this one has none) are never touched


def test_a_harness_that_may_not_mount_says_why(run: Path) -> None:
    code = (
        "from pathlib import Path; from harness.sandbox import disk\n"
        "try:\n"
        f"    disk.mount(Path({str(run)!r}), [], size_mb=4, outbox=None, outbox_mb=None)\n"
        "except disk.DiskUnavailable as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if "Permission denied" in done.stderr or "ModuleNotFoundError" in done.stderr:
        pytest.skip(f"the checkout is not readable by an unprivileged user: {done.stderr[-200:]}")
    assert "not root" in done.stdout, done.stderr
