"""One writer per run tree: an flock on `<runs root>/.assay.lock`, plus the tree's scratch space.

The lock is the kernel's (`fcntl.flock`), so a holder that dies — SIGKILL included — frees it
at once, and a stale file of a dead holder is simply taken over. The file's text (pid, host,
start time, command) is only there to tell the second runner who holds the tree.

Scratch space (grading copies, check folders, the sandbox's /etc) lives inside the tree under
`.scratch/`, so a killed runner leaves nothing in the machine's /tmp; whoever takes the lock
next empties it, since no one else can be using it then.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import shutil
import socket
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from harness.artifacts.names import LOCK_FILE, SCRATCH_DIR

SHM = "/dev/shm"
"""The machine's shared-memory tmpfs (`host_tmp(memory=True)`)."""


class TreeBusy(Exception):
    """Another runner holds the run tree."""

    def __init__(self, root: Path, holder: str) -> None:
        super().__init__(
            f"{root} is in use by {holder} (lock {root / LOCK_FILE}); wait for it or pass --wait"
        )
        self.root = root
        self.holder = holder


def _describe(text: str) -> str:
    try:
        info = json.loads(text)
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(info["started"])))
        return f"assay pid {int(info['pid'])} on {info['host']} since {started}"
    except (ValueError, KeyError, TypeError):
        return "another assay process"


@contextlib.contextmanager
def hold(root: Path, *, wait: bool = False, poll_s: float = 0.5) -> Iterator[Path]:
    """Hold the run tree at `root` for this process; yields its scratch folder.

    Raises:
        TreeBusy: another live process holds it and `wait` is False.
        OSError: the tree cannot be created or written (read-only, full disk): the caller says so.
    """
    root.mkdir(parents=True, exist_ok=True)
    path = root / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                    raise
                if not wait:
                    raise TreeBusy(
                        root, _describe(path.read_text(encoding="utf-8", errors="replace"))
                    ) from None
                time.sleep(poll_s)  # a wait for another process, not for a result: polling is the contract
        info = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.time(), "argv": sys.argv}
        with contextlib.suppress(OSError):  # who holds it is a courtesy; a full disk must not stop here
            os.ftruncate(fd, 0)
            os.pwrite(fd, (json.dumps(info) + "\n").encode(), 0)
        scratch = _fresh_scratch(root)
        previous = tempfile.tempdir
        tempfile.tempdir = str(scratch)  # every mkdtemp of this process: grading copies, check folders
        try:
            yield scratch
        finally:
            tempfile.tempdir = previous
            shutil.rmtree(scratch, ignore_errors=True)
    finally:
        os.close(fd)  # closing the descriptor releases the flock


def _fresh_scratch(root: Path) -> Path:
    """Empty whatever scratch a dead holder left, then make this holder's."""
    base = root / SCRATCH_DIR
    if base.exists():
        for dirpath, _dirs, _files in os.walk(base):  # read-only copies must become removable
            with contextlib.suppress(OSError):
                os.chmod(dirpath, 0o755)
        shutil.rmtree(base, ignore_errors=True)
    mine = base / str(os.getpid())
    mine.mkdir(parents=True)
    return mine


def host_tmp(kind: str, *, memory: bool = False) -> Path:
    """A short private folder in the machine's temp dir for what must stay short or outlive one
    tree (a Unix socket's folder, the per-process /etc copy): `assay-<kind>-<pid>-*`.

    memory: in /dev/shm (a tmpfs) where this machine has one to write in, for small files made
    and removed once per process: there a file costs no inode of a disk, which on some filesystems
    (ext4 without a journal) means a scan past every inode freed in the last minutes.

    Folders of the same kind left by a process that no longer lives (a SIGKILL skips every
    cleanup) are removed first, so kills do not pile them up.
    """
    base = Path(os.environ.get("TMPDIR") or "/tmp")
    if memory and os.path.isdir(SHM) and os.access(SHM, os.W_OK | os.X_OK):
        base = Path(SHM)
    for old in base.glob(f"assay-{kind}-*-*"):
        pid = old.name.split("-")[2]
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            shutil.rmtree(old, ignore_errors=True)
    return Path(tempfile.mkdtemp(prefix=f"assay-{kind}-{os.getpid()}-", dir=base))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
