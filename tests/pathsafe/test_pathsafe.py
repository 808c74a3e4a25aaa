"""Path safety on real files and real symlinks an agent could plant."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.sandbox.pathsafe import (
    PathEscape,
    clean_relative,
    copy_tree,
    is_inside,
    matches,
    read_inside,
    resolve_inside,
    walk,
    write_inside,
)


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace and, beside it, a secret the agent would like to leak."""
    ws = tmp_path / "workspace"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "app.py").write_text("print('app')\n")
    secret = tmp_path / "reference" / "solution.py"
    secret.parent.mkdir()
    secret.write_text("THE ANSWER\n")
    return ws, secret


@pytest.mark.parametrize("bad", ["/etc/shadow", "../run.json", "src/../../x", "", "a\x00b", "."])
def test_clean_relative_refuses_escapes(bad: str) -> None:
    with pytest.raises(PathEscape):
        clean_relative(bad)


def test_clean_relative_normalises() -> None:
    assert clean_relative("./src//app.py").as_posix() == "src/app.py"


def test_resolve_inside_allows_plain_paths(layout: tuple[Path, Path]) -> None:
    ws, _ = layout
    assert resolve_inside(ws, "src/app.py") == ws / "src" / "app.py"
    assert resolve_inside(ws, "new/dir/file.txt") == ws / "new" / "dir" / "file.txt"


def test_symlinked_folder_out_of_the_workspace_is_refused(layout: tuple[Path, Path]) -> None:
    ws, secret = layout
    (ws / "ref").symlink_to(secret.parent)
    with pytest.raises(PathEscape, match="symlink out of"):
        resolve_inside(ws, "ref/solution.py")
    with pytest.raises(PathEscape):
        read_inside(ws, "ref/solution.py")
    with pytest.raises(PathEscape):
        write_inside(ws, "ref/solution.py", b"overwritten")
    assert secret.read_text() == "THE ANSWER\n"


def test_final_symlink_is_never_followed(layout: tuple[Path, Path]) -> None:
    ws, secret = layout
    (ws / "answer.json").symlink_to("/etc/shadow")
    (ws / "leak.txt").symlink_to(secret)
    for name in ("answer.json", "leak.txt"):
        with pytest.raises(PathEscape):
            read_inside(ws, name)
        with pytest.raises(PathEscape):
            resolve_inside(ws, name)
    with pytest.raises(PathEscape):
        write_inside(ws, "leak.txt", b"x")
    assert secret.read_text() == "THE ANSWER\n"


def test_symlink_inside_the_workspace_is_fine_for_folders(layout: tuple[Path, Path]) -> None:
    ws, _ = layout
    (ws / "alias").symlink_to("src")
    assert resolve_inside(ws, "alias/app.py") == ws / "alias" / "app.py"
    assert is_inside(ws, ws / "alias" / "app.py")


def test_read_inside_reads_regular_files_only(layout: tuple[Path, Path]) -> None:
    ws, _ = layout
    assert read_inside(ws, "src/app.py") == b"print('app')\n"
    assert read_inside(ws, "src/app.py", max_bytes=5) == b"print"
    os.mkfifo(ws / "pipe")
    with pytest.raises(PathEscape, match="not a regular file"):
        read_inside(ws, "pipe")


def test_copy_tree_keeps_links_as_links_and_never_copies_their_targets(layout: tuple[Path, Path]) -> None:
    ws, secret = layout
    (ws / "shadow").symlink_to("/etc/shadow")
    (ws / "ref").symlink_to(secret.parent)
    (ws / ".git").mkdir()
    (ws / ".git" / "HEAD").write_text("ref")
    os.mkfifo(ws / "pipe")
    out = ws.parent / "snapshot"
    skipped = copy_tree(ws, out, skip=(".git",))
    assert skipped == ["pipe"]
    assert (out / "src" / "app.py").read_text() == "print('app')\n"
    assert (out / "shadow").is_symlink() and os.readlink(out / "shadow") == "/etc/shadow"
    assert (out / "ref").is_symlink()
    assert not (out / ".git").exists()
    copied = b"".join(p.read_bytes() for p in out.rglob("*") if p.is_file() and not p.is_symlink())
    assert b"THE ANSWER" not in copied


def test_walk_does_not_descend_symlinked_folders(layout: tuple[Path, Path]) -> None:
    ws, _ = layout
    (ws / "ref").symlink_to(ws.parent / "reference")
    names = [rel.as_posix() for rel, _ in walk(ws)]
    assert names == ["ref", "src", "src/app.py"]


@pytest.mark.parametrize(
    ("path", "globs", "expected"),
    [
        ("src/app.py", ["src/**"], True),
        ("src/deep/app.py", ["src/*.py"], False),
        ("src/deep/app.py", ["**/*.py"], True),
        ("app.py", ["**/*.py"], True),
        ("tests/test_x.py", ["src/**", "docs/*.md"], False),
        ("anything/at/all", ["**"], True),
    ],
)
def test_writable_globs(path: str, globs: list[str], expected: bool) -> None:
    assert matches(path, globs) is expected


def test_collect_moves_agent_files_and_refuses_forgeries(tmp_path: Path) -> None:
    from harness.sandbox.pathsafe import collect

    outbox, run = tmp_path / "outbox", tmp_path / "run"
    outbox.mkdir()
    (run / "workspace").mkdir(parents=True)
    (run / "trace.jsonl").write_text("one\n")
    (outbox / "usage.jsonl").write_text("{}\n")
    (outbox / "trace.jsonl").write_text("two\n")
    (outbox / "grade.json").write_text('{"passed": true}')
    (outbox / "steps").mkdir()
    (outbox / "steps" / "evil").symlink_to("/etc")
    (outbox / "logs").mkdir()
    (outbox / "logs" / "cli.log").write_text("log")
    (outbox / "logs" / "out").symlink_to("/etc/shadow")
    (outbox / "link.json").symlink_to("/etc/passwd")
    (outbox / "workspace").mkdir()  # an empty mount point the sandbox made: dropped silently
    refused = collect(outbox, run)
    assert sorted(refused) == ["grade.json", "link.json", "logs/out", "steps", "trace.jsonl"]
    assert (run / "usage.jsonl").read_text() == "{}\n"
    assert (run / "trace.jsonl").read_text() == "one\n"  # the harness's alone (harness.trial.tracing)
    assert (run / "logs" / "cli.log").read_text() == "log"
    assert (
        not (run / "grade.json").exists()
        and not (run / "steps").exists()
        and not (run / "link.json").exists()
    )
    assert not (run / "logs" / "out").exists()
    assert os.listdir(outbox) == []


def test_collect_never_raises_for_what_the_agent_left(tmp_path: Path) -> None:
    from harness.sandbox.pathsafe import MAX_OUTBOX_DEPTH, collect

    outbox, run = tmp_path / "outbox", tmp_path / "run"
    outbox.mkdir()
    run.mkdir()
    os.mkfifo(outbox / "usage.jsonl")  # a FIFO where a file is expected: never opened
    deep = outbox / "logs"
    for _ in range(MAX_OUTBOX_DEPTH + 5):
        deep = deep / "d"
    deep.mkdir(parents=True)
    (deep / "x.log").write_text("deep")
    (outbox / "logs" / "top.log").write_text("top")
    (outbox / "a-big.bin").write_bytes(b"x" * 40_000)
    (outbox / "b-small.txt").write_text("fits")
    os.chmod(outbox / "b-small.txt", 0o4755)
    refused = collect(outbox, run, budget=20_000)  # blocks on disk count: 4 KiB per small file
    assert "usage.jsonl" in refused and "a-big.bin (over the outbox limit)" in refused
    assert any(r.startswith("logs/") and "deeper than" in r for r in refused)
    assert (run / "logs" / "top.log").read_text() == "top" and (run / "b-small.txt").read_text() == "fits"
    assert not (run / "usage.jsonl").exists() and not (run / "a-big.bin").exists()
    assert os.listdir(outbox) == []
    st = os.lstat(run / "b-small.txt")
    assert (st.st_uid, st.st_gid) == (os.geteuid(), os.getegid())
