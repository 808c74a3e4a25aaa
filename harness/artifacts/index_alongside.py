"""The results index checked alongside its reader: the report reads the index as it stands while a
process of its own stats every run folder against it (`harness.artifacts.index_scan.differing`).

On 100,000 runs that check is a stat of every run folder: half a second of CPU, and with a cold page
cache seconds of waiting on the disk for their inodes. Run before the report, it was the largest
share of its time; run beside it, in a process of its own (a thread would share the interpreter's
lock with the report and get a turn only every few milliseconds), the report's own work covers it.
Nothing is trusted meanwhile: a reader keeps what it read only when the check found every run folder
as the rows say and no row was written since the reader read the index's write count
(`harness.report.indexed.Listing.current`); else it syncs the index (`Index.sync`) and reads it again.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

from harness.artifacts.index import LAYOUT, Index, SyncStats, _layout, locate, open_index
from harness.artifacts.names import RUN_FILE

_CHECK = (
    "import sys; sys.path.insert(0, sys.argv[1]); from harness.artifacts.index_scan import differing; "
    "print(differing(*sys.argv[2:5]))"
)
"""The checking process: this assay's own `index_scan`, whatever the working folder holds (-I)."""


class Alongside:
    """The check of an index's rows against the run folders, running in a process of its own."""

    def __init__(self, path: Path, root: Path, prefix: str) -> None:
        source = str(Path(__file__).resolve().parents[2])  # the folder this assay is imported from
        self._proc = subprocess.Popen(
            [sys.executable, "-I", "-c", _CHECK, source, str(path), str(root), prefix],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
        )
        self._answer: tuple[int | None] | None = None
        """(differing run folders, or None when the check failed), once read."""

    def wait(self) -> int | None:
        """How many run folders differ from the rows (0: none), or None when the check failed."""
        if self._answer is None:
            out, _err = self._proc.communicate()
            text = out.decode(errors="replace").strip()
            self._answer = (int(text) if self._proc.returncode == 0 and text.isdigit() else None,)
        return self._answer[0]

    def finished(self) -> bool:
        """Whether the check is over (its answer then comes without waiting)."""
        return self._answer is not None or self._proc.poll() is not None

    def stop(self) -> None:
        """End the check if it still runs (its reader is gone: nothing will ask for its answer)."""
        if self._answer is None:
            if self._proc.poll() is None:
                self._proc.kill()
            self._proc.communicate()
            self._answer = (None,)


def open_alongside(root: Path) -> tuple[Index, Alongside | None, SyncStats | None]:
    """The index serving root with its check running alongside (`Alongside`) when the index is there,
    writable, in this assay's layout; else synced first, as by `open_index` (created, rebuilt, in
    memory)."""
    root = root.resolve()
    path, prefix = locate(root)
    if path.is_file() and not (root / RUN_FILE).is_file():
        try:
            index = Index(path, root, prefix)
            current = _layout(index.con) == LAYOUT
        except sqlite3.Error:
            current = False  # read-only tree, or not a database: open_index knows what to do
        else:
            if current:
                return index, Alongside(path, root, prefix), None
            index.close()
    index, stats = open_index(root)
    return index, None, stats
