"""Mounts in tests: what one mounted under its tmp_path is detached after it, whatever it asserted (a
test that finds a leak must not leave it on the machine). Its conftest imports the fixtures."""

from __future__ import annotations

import contextlib
import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


def mounts_under(folder: Path) -> list[str]:
    """Mount points under folder (not folder itself), in mount order."""
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4]
        if point.startswith(f"{folder}/"):
            found.append(point)
    return found


@pytest.fixture
def root_mounts(tmp_path: Path) -> Iterator[Path]:
    """tmp_path, for a test that mounts (root only: skipped with the reason otherwise); whatever is
    still mounted under it afterwards is detached."""
    if os.geteuid() != 0:
        pytest.skip("mounting size-limited filesystems needs a root harness")
    try:
        yield tmp_path
    finally:
        for point in reversed(mounts_under(tmp_path)):
            subprocess.run(["umount", "-l", point], check=False, capture_output=True)


@pytest.fixture
def small_fs(root_mounts: Path) -> Iterator[Path]:
    """An empty 1 MiB tmpfs at a short path (a Unix socket's path may not pass 107 bytes), detached
    after the test with whatever is mounted under it."""
    folder = Path(tempfile.mkdtemp(prefix="assay-fs-", dir="/tmp"))
    try:
        tmpfs(folder, "1m")
    except BaseException:  # pytest's skip too: the folder goes with it
        folder.rmdir()
        raise
    try:
        yield folder
    finally:
        for point in [*reversed(mounts_under(folder)), str(folder)]:
            subprocess.run(["umount", "-l", point], check=False, capture_output=True)
        folder.rmdir()


def tmpfs(folder: Path, size: str) -> Path:
    """An empty tmpfs of `size` (`4m`) mounted on folder (made if missing); the test is skipped with
    the reason when that cannot be done. Under `root_mounts` it is detached after the test."""
    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    return folder


def fill(folder: Path) -> None:
    """Write into folder until its filesystem refuses (ENOSPC), to its last byte."""
    fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        for size in (65536, 4096, 512, 1):
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"\0" * size)
    finally:
        os.close(fd)
