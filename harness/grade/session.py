"""A grading session: what one grader keeps from one run to the next.

Grading a run copies its workspace into a scratch folder and runs the scenario's check commands
there, in one sandbox launch (`harness.checks.batching`). Alone, each run pays for that launch: a
sandbox, an interpreter and pytest's import, often more than the checks themselves take. A session
keeps the scratch folder (the same path every run, emptied before each) and the batch servers
serving it (`harness.sandbox.batch_warm`), so a run costs its own checks:

    with Grading() as grading:
        for run_dir in runs:
            grade_run(run_dir, project=project, grading=grading)

Nothing of one run reaches the next: the folder is emptied by the harness before each run, and a
warm server carries nothing between runs (see `batch_warm`). The scratch's size limit (a tmpfs,
where the harness may mount) follows the job's; a run with another limit gets a new folder and new
servers. A session is used by one thread at a time.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import TracebackType

from harness.sandbox import disk, neutralise
from harness.sandbox.batch_warm import Servers

WORKSPACE = "ws"
HOME = "home"
SNAPSHOTS = "snap"
KEPT: Mapping[str, Mapping[str, object]] = {WORKSPACE: {}, HOME: {}, SNAPSHOTS: {}}
"""Folders of the scratch that stay from run to run, emptied (a warm server's sandbox has them
mounted: a new folder in their place would be another inode, which it would not see)."""


def _clear(folder: Path, keep: Mapping[str, object]) -> None:
    for name in sorted(os.listdir(folder)):
        path = folder / name
        inner = keep.get(name)
        if isinstance(inner, Mapping) and path.is_dir() and not path.is_symlink():
            _clear(path, inner)
        else:
            neutralise.remove_tree(path)


class Grading:
    """One grader's scratch folder and warm check servers, kept across the runs it grades."""

    def __init__(self) -> None:
        self.servers = Servers()
        self._root: Path | None = None
        self._size: int | None = None
        self._release: Callable[[], None] = lambda: None

    def scratch(self, size_mb: int | None) -> Path:
        """The scratch folder for the next run: empty but for the kept folders, themselves empty."""
        if self._root is not None and self._size == size_mb:
            try:
                _clear(self._root, KEPT)
                return self._root
            except OSError:
                pass  # something there will not go: a new folder, and new servers for it
        self.close()
        root = Path(tempfile.mkdtemp(prefix="assay-grade-"))
        self._release = disk.limit_scratch(root, size_mb)
        self._root, self._size = root, size_mb
        return root

    def snapshots(self) -> Path:
        """Where the snapshot pass keeps the workspace's entries aside (`CheckContext.snapshot_dir`)."""
        if self._root is None:
            raise RuntimeError("no scratch folder yet: call scratch() first")
        folder = self._root / SNAPSHOTS
        folder.mkdir(exist_ok=True)
        return folder

    def close(self) -> None:
        """End the servers, remove the folder."""
        self.servers.close()
        self._release()
        self._release = lambda: None
        if self._root is not None:
            neutralise.remove_tree(self._root, ignore_errors=True)
            self._root = None

    def __enter__(self) -> Grading:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class Graders:
    """One grading session per thread that asks (`mine`), all ended together (`close`): a pool's
    graders each keep theirs across the runs they grade."""

    def __init__(self) -> None:
        self._local = threading.local()
        self._all: list[Grading] = []
        self._lock = threading.Lock()

    def mine(self) -> Grading:
        grading: Grading | None = getattr(self._local, "grading", None)
        if grading is None:
            grading = self._local.grading = Grading()
            with self._lock:
                self._all.append(grading)
        return grading

    def close(self) -> None:
        with self._lock:
            for grading in self._all:
                grading.close()
            self._all.clear()


@contextlib.contextmanager
def scratch_for(grading: Grading | None, size_mb: int | None) -> Iterator[Path]:
    """The folder one run is graded in: the session's, or (without one) a new one, removed after."""
    if grading is not None:
        yield grading.scratch(size_mb)
        return
    folder = Path(tempfile.mkdtemp(prefix="assay-grade-"))
    # Checks run code the agent wrote: the scratch is a filesystem of its own size, as its workspace was.
    release = disk.limit_scratch(folder, size_mb)
    try:
        yield folder
    finally:
        release()
        neutralise.remove_tree(folder, ignore_errors=True)
