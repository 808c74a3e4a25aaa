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

import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from harness.artifacts.index_scan import locate
from harness.artifacts.names import RUN_FILE

if TYPE_CHECKING:
    from harness.artifacts.index import Index, SyncStats

_CHECK = (
    "import sys; sys.path.insert(0, sys.argv[1]); from harness.artifacts.index_scan import differing; "
    "print(differing(*sys.argv[2:5]))"
)
"""The checking process: this assay's own `index_scan`, whatever the working folder holds (-I)."""


class Alongside:
    """The check of an index's rows against the run folders, running in a process of its own."""

    def __init__(self, path: Path, root: Path, prefix: str) -> None:
        self.path, self.root, self.prefix = path, root, prefix
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


def start_check(root: Path) -> Alongside | None:
    """The check of the index serving root, started now (before a reader's own imports: this module
    imports none of the index's models), or None when there is no index to check (one run, no index
    yet: the reader syncs first)."""
    root = root.resolve()
    path, prefix = locate(root)
    if not path.is_file() or os.path.lexists(root / RUN_FILE):
        return None
    return Alongside(path, root, prefix)


def open_alongside(
    root: Path, check: Alongside | None = None
) -> tuple[Index, Alongside | None, SyncStats | None]:
    """The index serving root with its check running alongside (check, when it is of this root, else
    one started here) when the index is there, writable, in this assay's layout; else synced first, as
    by `open_index` (created, rebuilt, in memory), any check stopped."""
    from harness.artifacts.index import Index, open_index  # the models: after the start
    from harness.artifacts.index_db import LAYOUT, read_layout

    root = root.resolve()
    if check is not None and check.root != root:
        check.stop()
        check = None
    check = check or start_check(root)
    if check is not None:
        try:
            index = Index(check.path, root, check.prefix)
            current = read_layout(index.con) == LAYOUT
        except sqlite3.Error:
            current = False  # read-only tree, or not a database: open_index knows what to do
        else:
            if current:
                return index, check, None
            index.close()
        check.stop()
    index, stats = open_index(root)
    return index, None, stats
