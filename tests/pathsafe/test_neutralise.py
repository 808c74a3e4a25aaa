"""neutralise: one walk that strips unsafe mode bits and lists odd files, whatever the tree's shape."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
from pathlib import Path

import pytest

from harness.artifacts.sandbox_sections import printable
from harness.sandbox.neutralise import NotARegularFile, neutralise, remove_tree, walk_tree


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_setuid_setgid_sticky_and_world_write_are_stripped_everywhere(tmp_path: Path) -> None:
    (tmp_path / "home" / "bin").mkdir(parents=True)
    shell = tmp_path / "home" / "bin" / "sh"
    shell.write_bytes(b"#!/bin/sh\n")
    os.chmod(shell, 0o6755)
    other = tmp_path / "setuid-only"
    other.write_bytes(b"x")
    os.chmod(other, 0o4711)
    open_dir = tmp_path / "drop"
    open_dir.mkdir()
    os.chmod(open_dir, 0o1777)
    os.chmod(tmp_path, 0o2777)
    plain = tmp_path / "plain.py"
    plain.write_bytes(b"print(1)\n")
    os.chmod(plain, 0o644)

    report = neutralise(tmp_path)

    assert (_mode(shell), _mode(other), _mode(open_dir), _mode(tmp_path)) == (0o755, 0o711, 0o775, 0o775)
    assert _mode(plain) == 0o644
    assert report.stripped == 4
    assert set(report.stripped_paths) == {".", "home/bin/sh", "setuid-only", "drop"}
    assert report.odd_count == 0


def test_fifos_sockets_and_devices_are_listed_never_opened(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "entry.py")  # opening it for reading would block forever
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / "sock"))
    sock.close()
    if os.geteuid() == 0:
        os.mknod(tmp_path / "null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    report = neutralise(tmp_path)
    kinds = {o.path: o.kind for o in report.odd}
    expected = {"entry.py": "fifo", "sock": "socket"} | ({"null": "char_device"} if os.geteuid() == 0 else {})
    assert kinds == expected
    assert report.odd_count == len(expected)


def test_symlinks_are_reported_never_followed_nor_chmodded(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.write_bytes(b"secret")
    os.chmod(outside, 0o4755)
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "link").symlink_to(outside)
    (tree / "dirlink").symlink_to(tmp_path)
    seen = [(e.rel, e.kind) for e in walk_tree(tree)]
    assert seen == [(b"dirlink", "symlink"), (b"link", "symlink")]
    neutralise(tree)
    assert _mode(outside) == 0o4755  # the link's target is not the tree's


def test_a_very_deep_tree_and_a_4000_byte_path_are_walked(tmp_path: Path) -> None:
    # 2,000 nested folders: a path of about 4,000 bytes, beyond PATH_MAX for one syscall.
    fd = os.open(tmp_path, os.O_RDONLY)
    for _ in range(2000):
        os.mkdir("d", dir_fd=fd)
        child = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = child
    leaf = os.open("suid", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
    os.close(leaf)
    os.chmod("suid", 0o4755, dir_fd=fd)
    try:
        report = neutralise(tmp_path)
        assert report.entries == 2001 and report.deepest == 2001
        assert report.stripped == 1 and report.stripped_paths[0].endswith("…(4004 bytes)")
        assert stat.S_IMODE(os.stat("suid", dir_fd=fd).st_mode) == 0o755
    finally:
        os.close(fd)
        remove_tree(tmp_path / "d")  # pytest's own cleanup recurses: a tree this deep would break it


def test_names_with_newlines_escapes_and_bad_bytes_are_kept_exact_and_shown_safely(tmp_path: Path) -> None:
    names = [b"new\nline.py", b"\x1b[31mred", b"bad\xff.py", "caf\u00e9".encode()]
    for name in names:
        os.mkfifo(os.path.join(os.fsencode(tmp_path), name))
    entries = list(walk_tree(tmp_path))
    assert [e.rel for e in entries] == sorted(names)
    shown = {o.path for o in neutralise(tmp_path).odd}
    assert shown == {"new\\nline.py", "\\x1b[31mred", "bad\\xff.py", "caf\u00e9"}
    assert all(ch.isprintable() for text in shown for ch in text)


def test_open_reads_a_regular_file_and_refuses_anything_else(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_bytes(b"content")
    os.mkfifo(tmp_path / "b.py")
    for entry in walk_tree(tmp_path):
        if entry.kind == "file":
            with entry.open() as fh:
                assert fh.read() == b"content"
        else:
            with pytest.raises(NotARegularFile):
                entry.open()


def test_printable_escapes_backslashes_and_cuts_long_paths() -> None:
    assert printable(b"a\\b") == "a\\\\b"
    assert printable(b"x" * 500, limit=10) == "xxxxxxxxxx…(500 bytes)"


def test_a_missing_root_is_an_empty_report(tmp_path: Path) -> None:
    assert neutralise(tmp_path / "absent").entries == 0


def test_remove_tree_takes_any_depth_and_never_follows_a_link(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("keep")
    tree = tmp_path / "tree"
    fd = os.open(tmp_path, os.O_RDONLY)
    os.mkdir("tree", dir_fd=fd)
    for _ in range(1500):  # deeper than Python's recursion limit
        child = os.open("tree" if _ == 0 else "d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = child
        os.mkdir("d", dir_fd=fd)
    os.symlink(str(outside), "link", dir_fd=fd)
    os.mkfifo("fifo", dir_fd=fd)
    os.close(fd)
    try:
        remove_tree(tree)
    finally:
        if tree.exists():  # pytest's own cleanup recurses: never leave it a tree this deep
            subprocess.run(["rm", "-rf", "--", str(tree)], check=False)
    assert not tree.exists() and (outside / "keep").read_text() == "keep"
