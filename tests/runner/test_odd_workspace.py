"""Denominator integrity: nothing an agent leaves in its workspace takes the run out of the rates.

A FIFO, a socket, a device node, a 4,000-byte path, names with a newline, an escape sequence or bytes that are
not UTF-8, a tree 3,000 folders deep, 5,000 new files: each run is captured (diff.patch that
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

from harness.sandbox import fdtree
from harness.trial import capture, workspace
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
