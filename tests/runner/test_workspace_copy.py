"""The seed's copy: in-process for a small tree, a tar pipe for a large one; the same copy either way."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from harness.trial import workspace


def _seed(root: Path, files: int) -> Path:
    (root / "pkg" / "deep").mkdir(parents=True)
    for n in range(files):
        (root / "pkg" / f"f{n:03d}.txt").write_text(f"file {n}\n")
    tool = root / "pkg" / "deep" / "run.sh"
    tool.write_text("#!/bin/sh\necho hi\n")
    tool.chmod(0o750)
    (root / "link").symlink_to("pkg/deep/run.sh")
    (root / "dangling").symlink_to("nowhere")
    os.utime(root / "pkg" / "f000.txt", ns=(1_000_000_000, 1_234_567_891_000))
    (root / "pkg" / "deep").chmod(0o710)
    return root


def _shape(root: Path) -> dict[str, tuple[str, int, int | None, str]]:
    found: dict[str, tuple[str, int, int | None, str]] = {}
    for path in sorted(root.rglob("*")):
        st = path.lstat()
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            found[rel] = ("link", 0, None, os.readlink(path))
        elif path.is_dir():
            found[rel] = ("dir", stat.S_IMODE(st.st_mode), None, "")
        else:
            found[rel] = (
                "file",
                stat.S_IMODE(st.st_mode),
                st.st_mtime_ns // 10**9,
                path.read_text(),
            )  # tar: seconds
    return found


@pytest.mark.parametrize("files", [3, workspace.SMALL_TREE + 1])
def test_the_copy_keeps_modes_times_and_links(tmp_path: Path, files: int) -> None:
    seed = _seed(tmp_path / "seed", files)
    assert workspace._small(seed) == (files < workspace.SMALL_TREE)  # both paths are taken
    workspace.copy_tree(seed, tmp_path / "copy")
    assert _shape(tmp_path / "copy") == _shape(seed)
    assert (tmp_path / "copy" / "pkg" / "f000.txt").stat().st_mtime_ns // 10**9 == 1_234


def test_a_fifo_makes_a_tree_not_small(tmp_path: Path) -> None:
    seed = tmp_path / "seed"
    seed.mkdir()
    (seed / "a.txt").write_text("a\n")
    assert workspace._small(seed)
    os.mkfifo(seed / "pipe")
    assert not workspace._small(seed)  # tar recreates it; copying in-process would open it
