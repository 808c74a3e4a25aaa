"""Leaving the denominator, through the real runner under a real isolation: each attack leaves
something no tool expects (a FIFO, one where the entry file was, a socket, a 4,000-byte path,
names with a newline, escapes or non-UTF-8 bytes, a tree 3,000 folders deep, 5,000 files, 8 GB of
sparse files and a 1,000 MB entry file, the odd ones in HOME, TMPDIR and state too, records nested
too deeply for a JSON parser).
Blocked means: the run is graded (not failed_to_run, not ungradeable) and its diff.patch applies
to the seed with `git apply`. Tests named `test_attack_*` are counted by the suite's summary."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import FIXTURE
from tests.isolation.conftest import require
from tests.runner.odd_trees import remove_run, run_odd

pytestmark = pytest.mark.isolation


@pytest.fixture(params=["bwrap", "unshare"])
def iso(request: pytest.FixtureRequest) -> str:
    require(request.param)
    return str(request.param)


CASES = (
    "fifo",
    "fifo-entry",
    "socket",
    "long-name",
    "newline-name",
    "deep-tree",
    "many-files",
    "huge-sparse",
    "odd-elsewhere",
    "deep-json",
)


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    dest = tmp_path / "project"
    shutil.copytree(FIXTURE, dest, symlinks=True)
    yield dest
    remove_run(tmp_path)


@pytest.mark.parametrize("case", CASES)
def test_attack_e2e_leave_the_denominator(project: Path, tmp_path: Path, iso: str, case: str) -> None:
    record, checks = run_odd(project, tmp_path, case, iso)
    assert record.isolation == iso
    expected = "fail" if case == "fifo-entry" else "pass"
    assert checks == {"compiles": expected, "has-entry": expected}, case
    if case == "odd-elsewhere":  # found where they were left, listed, never opened
        trees = record.sandbox_trees
        assert [(trees[t].odd_count, trees[t].deepest) for t in ("home", "tmp", "state")] == [(2, 3000)] * 3
