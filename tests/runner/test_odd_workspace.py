"""Denominator integrity: nothing an agent leaves in its workspace takes the run out of the rates.

A FIFO, a socket, a device node, a 4,000-byte path, names with a newline, an escape sequence or bytes that are
not UTF-8, a tree 3,000 folders deep, 5,000 new files, 8 GB of sparse files, records nested too deeply
for a JSON parser: each run is captured (diff.patch that
`git apply` accepts on the seed, what it could not carry listed in run.json) and graded; a check
that needs what the agent broke fails with a reason.
"""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.artifacts.records import read_grade
from harness.sandbox import fdtree
from harness.trial import capture, workspace
from harness.trial.patch import FILE_MAX, diff
from tests.runner.odd_trees import ODD, RUN, remove_run, run_odd


@pytest.fixture(autouse=True)
def _clean(tmp_path: Path) -> Iterator[None]:
    yield
    remove_run(tmp_path)


@pytest.mark.parametrize("case", sorted(ODD))
def test_an_odd_workspace_is_graded_and_its_patch_applies(project: Path, tmp_path: Path, case: str) -> None:
    record, checks = run_odd(project, tmp_path, case, "none")
    omitted = {o.path: o.why for o in record.diff_omitted}
    if case == "fifo-entry":
        assert checks == {"compiles": "fail", "has-entry": "fail"}
        assert omitted["app/main.py"].startswith("fifo: a patch carries no such file; the patch deletes")
    else:
        assert checks == {"compiles": "pass", "has-entry": "pass"}
    if case == "fifo":
        assert omitted == {"app/pipe": "fifo: a patch carries no such file"}
    if case == "socket":
        assert omitted == {"app/sock": "socket: a patch carries no such file"}
    if case in ("long-name", "newline-name", "many-files"):
        assert omitted == {}
        assert record.unsafe_edits == ()
    if case == "newline-name":
        patch = (tmp_path / RUN / "diff.patch").read_bytes()
        assert b'+++ "b/app/new\\nline.py"' in patch and b'"b/app/non\\377utf8.py"' in patch
    if case == "deep-tree":
        assert list(omitted.values()) == ["path longer than 4000 bytes"]
    if case == "huge-sparse":  # never read into the patch: capture took 270 s and 20 GB before
        assert omitted == {f"app/s{i}.bin": f"larger than {FILE_MAX:,} bytes" for i in range(8)}
        ws_copy = tmp_path / RUN / "workspace" / "app" / "s0.bin"
        assert ws_copy.stat().st_size == 1000 << 20 and ws_copy.stat().st_blocks == 0  # kept sparse
        snapshots = tmp_path / RUN / "snapshots"
        assert sum(f.stat().st_size for f in snapshots.iterdir()) < 1 << 20
    if case == "odd-elsewhere":  # listed where they were found, never opened
        trees = record.sandbox_trees
        assert [(trees[t].odd_count, trees[t].deepest) for t in ("home", "tmp", "state")] == [(2, 3000)] * 3
    if case == "deep-json":  # malformed rows, never a crash: the good row is counted
        assert (record.metrics.input_tokens, record.metrics.output_tokens) == (7, 3)
        assert record.agent_version is None  # agent.json unreadable: no version read from it
        usage = read_grade(tmp_path / RUN).usage  # type: ignore[union-attr]
        assert (usage.input, usage.malformed_rows) == (7, 2)


def test_a_device_node_is_left_out_of_the_patch_and_the_graders_copy(tmp_path: Path) -> None:
    """No agent can make a device node (no CAP_MKNOD in the sandbox); one the harness finds anyway
    (isolation none, a run tree from elsewhere) is never opened: listed where the patch and the
    grader's copy leave it out. Made here by the test itself, so it needs root."""
    seed = tmp_path / "seed"
    (seed / "app").mkdir(parents=True)
    (seed / "app" / "main.py").write_text("x = 1\n")
    run_dir = tmp_path / RUN
    ws = workspace.create(seed, run_dir)
    workspace.commit_baseline(ws)
    try:
        os.mknod(ws.root / "app" / "dev", stat.S_IFCHR | 0o600, os.makedev(1, 3))  # /dev/null's numbers
    except PermissionError:
        pytest.skip("making a device node needs CAP_MKNOD")
    (ws.root / "app" / "main.py").write_text("x = 2\n")
    fields = capture.workspace(ws, ("app/**",), run_dir)
    assert [(o.path, o.why) for o in fields["diff_omitted"]] == [
        ("app/dev", "char_device: a patch carries no such file")
    ]
    applied = subprocess.run(
        ["git", "apply", "--check", str(run_dir / "diff.patch")], cwd=seed, capture_output=True, text=True
    )
    assert applied.returncode == 0, applied.stderr
    skipped = fdtree.copy_tree(ws.root, tmp_path / "graders-copy")
    assert [tuple(s) for s in skipped] == [("app/dev", "char_device")]
    assert (tmp_path / "graders-copy" / "app" / "main.py").read_text() == "x = 2\n"


def _workspace(tmp_path: Path) -> workspace.Workspace:
    seed = tmp_path / "seed"
    (seed / "app").mkdir(parents=True)
    (seed / "app" / "main.py").write_text("x = 1\n")
    ws = workspace.create(seed, tmp_path / RUN)
    workspace.commit_baseline(ws)
    return ws


def test_what_the_patch_carries_is_bounded_and_what_it_leaves_out_is_listed(tmp_path: Path) -> None:
    """The agent sets its files' sizes and names: a file over the limit, and what passes the
    patch's budget (content and names), are left out in path order, and the patch still applies."""
    ws = _workspace(tmp_path)
    for name, size in (("a.txt", 1000), ("b.txt", 3000), ("c.txt", 500), ("d.txt", 10)):
        (ws.root / "app" / name).write_text("y" * (size - 1) + "\n")
    patch = diff(ws, file_max=2000, total_max=1500)  # a: 1,136 of it; c (636) no longer fits, d (146) does
    assert [(o.path, o.why) for o in patch.omitted] == [
        ("app/b.txt", "larger than 2,000 bytes"),
        ("app/c.txt", "past the 1,500 bytes a patch carries"),
    ]
    seed = tmp_path / "seed"
    applied = subprocess.run(["git", "apply", "-"], cwd=seed, input=patch.data, capture_output=True)
    assert applied.returncode == 0, applied.stderr
    assert sorted(p.name for p in (seed / "app").iterdir()) == ["a.txt", "d.txt", "main.py"]


def test_unsafe_edits_are_listed_printable_and_counted_in_full(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    for i in range(250):
        (ws.root / f"out{i:03d}.txt").write_text("z\n")
    (ws.root / os.fsdecode(b"bad\xff\n\x1b[31m.txt")).write_text("z\n")
    fields = capture.workspace(ws, ("app/**",), tmp_path / RUN)
    assert fields["unsafe_edits_count"] == 251 and len(fields["unsafe_edits"]) == 200
    assert fields["unsafe_edits"][0] == "bad\\xff\\n\\x1b[31m.txt"  # no byte of it reaches a terminal


def test_the_graders_copy_keeps_a_sparse_file_sparse(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    with (src / "hole.bin").open("wb") as fh:
        fh.truncate(1000 << 20)
        fh.write(b"data")
    assert fdtree.copy_tree(src, tmp_path / "copy") == []
    copied = (tmp_path / "copy" / "hole.bin").stat()
    assert copied.st_size == 1000 << 20 and copied.st_blocks * 512 < 1 << 20  # not 1,000 MB of zeros
    with (tmp_path / "copy" / "hole.bin").open("rb") as fh:
        assert fh.read(4) == b"data"
