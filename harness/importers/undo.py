"""What one `assay import` changes in the project, put back as it was unless the import finishes.

Every path the import writes, replaces or removes (in the project) is `claim`ed first: what is
there is moved aside into the attic, at the same path under it (a folder beside the staging one,
on the same disk: a rename, never a copy), and the folders made for it are noted. `commit` drops the attic; `rollback` removes what
the import wrote, moves back what it moved aside, and removes the folders it made (only empty
ones: a folder someone else wrote into stays). The journal and the disk never disagree: Ctrl-C,
SIGTERM and SIGHUP wait while either changes, then take effect as they would have.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

from harness.errors import TreeUnwritable

STOPS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""The signals that stop the CLI (harness.cli turns the last two into KeyboardInterrupt too)."""


class Undo:
    """The journal of one import's changes to the project."""

    def __init__(self, project: Path, attic: Path) -> None:
        """`attic` must not exist yet: what is in one is what an earlier import moved aside."""
        self.project = project
        self.attic = attic
        self._written: list[Path] = []
        """Claimed paths: whatever is there on rollback is the import's."""
        self._kept: list[tuple[Path, Path]] = []
        """(claimed path, where what was there waits)."""
        self._made: list[Path] = []
        """Folders made for claimed paths, top first."""

    def claim(self, path: Path) -> Path:
        """`path` is about to be written, replaced or removed: what is there now is moved aside
        (it comes back on `rollback`); whatever the import leaves there goes on `rollback`."""
        if path in self._written:
            return path
        with held_signals():
            self._note_made(path.parent)
            if path.exists() or path.is_symlink():
                self._note_made(self.attic)
                aside = self.attic / path.relative_to(self.project)  # its own path: plain to read
                aside.parent.mkdir(parents=True, exist_ok=True)
                self._kept.append((path, aside))
                shutil.move(path, aside)
            self._written.append(path)
        return path

    def claimed(self, path: Path) -> bool:
        """Whether `path` is the import's to put back."""
        return path in self._written

    def restore(self, path: Path) -> None:
        """Put one claimed path back as it was before the import (the import keeps the rest)."""
        if path not in self._written:
            return
        with held_signals():
            _remove(path)
            for original, aside in self._kept:
                if original == path:
                    shutil.move(aside, original)
            self._kept = [(o, a) for o, a in self._kept if o != path]
            self._written = [p for p in self._written if p != path]

    def commit(self) -> None:
        """The import finished: what it replaced is dropped."""
        with held_signals(replay=False):  # finished: a late Ctrl-C must not say it was not
            shutil.rmtree(self.attic, ignore_errors=True)
            self._written, self._kept, self._made = [], [], []

    def rollback(self) -> None:
        """Put the project back as it was before the first claim.

        Raises:
            TreeUnwritable: a step failed (a read-only or failing disk); the message names what
                is left and where the originals wait.
        """
        while True:
            try:
                self._rollback()
            except KeyboardInterrupt:  # a second Ctrl-C before the signals were held: nothing was done yet
                continue
            return

    def _rollback(self) -> None:
        left: list[str] = []
        with held_signals(replay=False):  # the command is ending anyway: a second Ctrl-C is moot
            for path in reversed(self._written):
                try:
                    _remove(path)
                except OSError as exc:
                    left.append(f"{self._rel(path)} is left ({exc.strerror or exc})")
            for original, aside in reversed(self._kept):
                if not aside.exists() and not aside.is_symlink():
                    continue  # stopped before it was moved: it never left
                try:
                    if original.exists() or original.is_symlink():
                        raise FileExistsError(f"{self._rel(original)} is in the way")
                    shutil.move(aside, original)
                except OSError as exc:
                    left.append(f"{self._rel(original)} waits in {self._rel(aside)} ({exc.strerror or exc})")
            if not left:
                shutil.rmtree(self.attic, ignore_errors=True)
            for folder in reversed(self._made):
                with contextlib.suppress(OSError):  # not empty: someone else's files are in it
                    folder.rmdir()
            self._written, self._kept, self._made = [], [], []
        if left:
            raise TreeUnwritable("the import stopped and could not put the project back: " + "; ".join(left))

    def _note_made(self, folder: Path) -> None:
        """Note the folders from the project down to `folder` that do not exist yet."""
        missing = []
        while folder != self.project and self.project in folder.parents and not folder.exists():
            missing.append(folder)
            folder = folder.parent
        self._made += [f for f in reversed(missing) if f not in self._made]

    def _rel(self, path: Path) -> str:
        return path.relative_to(self.project).as_posix() if path.is_relative_to(self.project) else str(path)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():  # never there (its folder a file, say): nothing to remove
        path.unlink()


@contextlib.contextmanager
def held_signals(*, replay: bool = True) -> Iterator[None]:
    """Ctrl-C, SIGTERM and SIGHUP wait until the block is done, then take effect as they would
    have (through harness.cli's handlers: KeyboardInterrupt); `replay=False` drops them. Only the
    main thread may set handlers; elsewhere the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = {}
    try:
        for s in STOPS:
            previous[s] = signal.signal(s, lambda signum, _frame: caught.append(signum))
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler if handler is not None else signal.SIG_DFL)
        for signum in dict.fromkeys(caught) if replay else ():
            signal.raise_signal(signum)
