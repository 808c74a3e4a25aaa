"""The results index: one SQLite row per run of a tree, so a reader never walks 100,000 run folders.

`<tree>/.assay-index.sqlite` (WAL) holds, per run directory, every scalar field of its run.json and
grade.json as a column, both records verbatim, the scenario's family and split, the files at the
run's top, and what it takes to tell the row is current: the run folder's ctime, its records' stamp
(`harness.artifacts.index_scan`) and each record's size, mtime and hash (what a row holds and how
it is read: `harness.artifacts.index_rows`; the SQLite file's layout, connections and writes:
`harness.artifacts.index_db`).

Writers: the grader after each grade.json (`record`, into every index above the run), the Dask
client after installing a run, and `sync`. Readers call `sync` first, which never trusts the file
blindly: a missing, corrupt or differently laid out index is rebuilt from the run directories; else
every folder of the tree that is not a run is listed (new and removed runs) and every run folder and
its records are stat'ed — an atomic write of run.json or grade.json (write, then rename) changes
that folder's ctime, an edit in place the record's own — and each run whose stat changed is read
again. A regrade through the grader rewrites its row.
Concurrent writers (two grading workers, a report) are serialised by SQLite's lock (busy timeout).
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.artifacts.index_db import LAYOUT, connect, create, quote, read_layout, touch, write
from harness.artifacts.index_rows import Row, Scenarios, read_row
from harness.artifacts.index_scan import Stat, known, scan, stat_of
from harness.artifacts.index_scan import locate as locate  # where every writer and reader finds it
from harness.artifacts.names import INDEX_FILE, RUN_FILE
from harness.artifacts.store import FutureSchemaError

BATCH = 5000
"""Rows written per transaction while syncing."""


@dataclass(frozen=True)
class SyncStats:
    """What one `sync` found and did."""

    runs: int
    read: int
    """Run folders read (new, changed, or all of them on a rebuild)."""
    removed: int
    rebuilt: str | None
    """Why the whole index was rebuilt, or None."""
    seconds: float


class Index:
    """An open index and the part of the tree it is read for (`prefix`)."""

    def __init__(self, path: Path | str, root: Path, prefix: str) -> None:
        self.path = path
        self.root = root
        self.prefix = prefix
        self.con = connect(path)

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def where(self, column: str = "dir") -> tuple[str, tuple[str, ...]]:
        """The SQL clause (and its parameters) selecting the rows under root, by column."""
        if not self.prefix:
            return "", ()
        # dir >= prefix and dir < prefix + U+10FFFF: the rows under the prefix, by the primary key.
        return f" WHERE {column} >= ? AND {column} < ?", (self.prefix, self.prefix + "\U0010ffff")

    def known(self) -> dict[str, Stat]:
        """dir (relative to root) -> the run folder's stat when its row was written."""
        return known(self.con, self.prefix)

    def rows(self, table: str, columns: tuple[str, ...]) -> Iterator[tuple[Any, ...]]:
        """A table's rows under root in path order, `dir` (always the first column) relative to root."""
        where, params = self.where()
        cut = len(self.prefix)
        cur = self.con.execute(
            f"SELECT {', '.join(quote(c) for c in ('dir', *columns))} FROM {table}{where} ORDER BY dir",
            params,
        )
        for row in cur:
            yield (row[0][cut:], *row[1:]) if cut else row

    def put_facts(self, facts: list[tuple[str, bytes]], generation: str | None) -> bool:
        """Cache a reader's derived form of runs (dir relative to root, blob) unless a row was written
        since it read generation (the facts may be of the row before); dropped when a run changes."""
        if not facts:
            return True
        self.con.execute("BEGIN IMMEDIATE")
        try:
            if generation is None or self.generation() != generation:
                return False
            self.con.executemany(
                "INSERT OR REPLACE INTO facts VALUES (?, ?)", [(self.prefix + d, blob) for d, blob in facts]
            )
            return True
        finally:
            self.con.execute("COMMIT")

    def drop_facts(self) -> None:
        """Forget every cached fact and aggregate (their reader's form changed)."""
        self.con.execute("DELETE FROM facts")
        self.drop_aggregates()

    def aggregates(self) -> dict[str, bytes]:
        """block (a folder of runs, `a/b/`, from the index's root) -> a reader's cached aggregate of it."""
        where, params = self.where("block")
        cut = len(self.prefix)
        found = self.con.execute(f"SELECT block, state FROM aggregates{where}", params)
        return {block[cut:]: state for block, state in found}

    def generation(self) -> str | None:
        """Counts the writes of rows: read before a reader lists the rows it derives a cached aggregate from."""
        return self.meta("generation")

    def put_aggregate(self, block: str, state: bytes, generation: str | None) -> bool:
        """Cache a reader's aggregate of every run under block (`a/b/` from root), unless a row was
        written since it read generation (the aggregate may predate it); dropped when a run under it is
        written. Whether it was cached."""
        self.con.execute("BEGIN IMMEDIATE")
        try:
            if generation is None or self.generation() != generation:
                return False
            self.con.execute("INSERT OR REPLACE INTO aggregates VALUES (?, ?)", (self.prefix + block, state))
            return True
        finally:
            self.con.execute("COMMIT")

    def drop_aggregates(self) -> None:
        """Forget every cached aggregate (their reader's form changed)."""
        self.con.execute("DELETE FROM aggregates")

    def meta(self, key: str) -> str | None:
        found = self.con.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return str(found[0]) if found else None

    def set_meta(self, key: str, value: str) -> None:
        self.con.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def sync(self) -> SyncStats:
        """Bring the rows under root in line with the run folders (see the module docstring)."""
        t0 = time.perf_counter()
        rebuilt = None
        layout = read_layout(self.con)
        if layout != LAYOUT:
            rebuilt = "no index" if layout is None else "the index was written by another assay"
            create(self.con)
        if self.generation() is None:  # an index from before writes were counted
            self.con.execute("INSERT OR IGNORE INTO meta VALUES ('generation', '0')")
        known = {} if rebuilt else self.known()
        seen: set[str] = set()
        changed: list[tuple[str, str]] = []
        for rel, stat in scan(str(self.root), known):
            seen.add(rel)
            if known.get(rel) != stat:
                changed.append((rel, os.path.join(str(self.root), rel) if rel else str(self.root)))
        gone = [d for d in known if d not in seen]
        scenarios = Scenarios()
        rows: list[Row] = []
        written = 0
        demoted = 0
        for rel, path in changed:
            try:
                row = read_row(path, self.prefix + rel, scenarios)
            except FileNotFoundError:
                row = None  # removed while we looked
            if row is None:
                gone.append(rel)
                demoted += 1
            else:
                rows.append(row)
            if len(rows) >= BATCH:  # memory stays flat while a big tree is indexed
                write(self.con, rows, [])
                written += len(rows)
                rows = []
        if rows or gone:
            write(self.con, rows, [self.prefix + d for d in gone])
        written += len(rows)
        if demoted:  # a run folder that holds no run any more: the runs below it are found now
            more = self.sync()
            return SyncStats(
                more.runs,
                len(changed) + more.read,
                len(gone) + more.removed,
                rebuilt,
                time.perf_counter() - t0,
            )
        return SyncStats(
            runs=len(seen) - (len(changed) - written),
            read=len(changed),
            removed=len(gone),
            rebuilt=rebuilt,
            seconds=time.perf_counter() - t0,
        )


def open_index(root: Path, *, sync: bool = True) -> tuple[Index, SyncStats | None]:
    """The index serving root, created (or rebuilt) as needed, synced with the tree unless told not to.

    A tree the index cannot be written in (read-only) gets an index in memory for this reader only.
    """
    root = root.resolve()
    # One run (run.json of whatever kind): read it alone, in memory (an index above keys it differently).
    if os.path.lexists(root / RUN_FILE):
        index = Index(":memory:", root, "")
        return index, index.sync() if sync else None
    path, prefix = locate(root)
    try:
        index = Index(path, root, prefix)
        if read_layout(index.con) is None and path.exists() and path.stat().st_size:
            index.close()
            _discard(path)  # not an index this assay can read: rebuilt from the run folders
            index = Index(path, root, prefix)
        stats = index.sync() if sync else None
    except sqlite3.OperationalError:
        index = Index(":memory:", root, "")
        stats = index.sync() if sync else None
    except sqlite3.DatabaseError:
        _discard(path)
        index = Index(path, root, prefix)
        stats = index.sync() if sync else None
    return index, stats


def _discard(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)


class _Writer:
    """One open connection to an index, kept for the process's later `record` calls: opening and
    closing a WAL database per run costs a checkpoint (fsyncs) each time."""

    def __init__(self, path: Path, ident: tuple[int, int, int]) -> None:
        self.con = connect(path, shared=True)
        self.ident = ident
        self.lock = threading.Lock()


_WRITERS: dict[str, _Writer] = {}
_WRITERS_LOCK = threading.Lock()


def _writer(path: Path) -> _Writer | None:
    """The process's connection to the index at path, opened anew when the file was replaced (a
    rebuild, a removal) or the process forked; None when there is no index file."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    ident = (os.getpid(), st.st_dev, st.st_ino)
    with _WRITERS_LOCK:
        held = _WRITERS.get(str(path))
        if held is not None and held.ident != ident:
            if held.ident[0] == ident[0]:
                held.con.close()
            held = None  # a forked child never touches its parent's connection
        if held is None:
            held = _WRITERS[str(path)] = _Writer(path, ident)
        return held


def record(run_dir: Path) -> int:
    """Write run_dir's row into every index above it (after its grade.json changed); how many.

    An index that cannot be written now is left to its next reader's sync, which sees the change.
    """
    run_dir = run_dir.resolve()
    written = 0
    row: Row | None = None
    for folder in run_dir.parents:
        path = folder / INDEX_FILE
        if not path.is_file():
            continue
        rel = run_dir.relative_to(folder).as_posix()
        try:
            row = read_row(str(run_dir), rel)
        except (OSError, FutureSchemaError):
            return written
        if row is None:
            return written
        try:
            writer = _writer(path)
            if writer is None:
                continue
            with writer.lock:
                if read_layout(writer.con) == LAYOUT:
                    write(writer.con, [row], [])
                    written += 1
        except sqlite3.Error:
            continue
    return written


def record_listing(run_dir: Path) -> int:
    """After a derived file (its page, view.html) appeared in run_dir: the folder's ctime and listing
    in every index above it whose row still holds the run.json and grade.json on disk (the same
    records' stamp); elsewhere the whole row (`record`). How many indexes were written.

    The records are not read again: a page costs its index a few stats and an UPDATE, not a second
    parse of both records (the grade that came just before wrote them)."""
    run_dir = run_dir.resolve()
    try:
        dir_ctime_ns, records_stamp = stat_of(str(run_dir))
        listing = json.dumps(sorted(n for n in os.listdir(run_dir) if not n.startswith(".")))
    except OSError:
        return 0
    written = 0
    for folder in run_dir.parents:
        path = folder / INDEX_FILE
        if not path.is_file():
            continue
        rel = run_dir.relative_to(folder).as_posix()
        try:
            writer = _writer(path)
            if writer is None:
                continue
            with writer.lock:
                if read_layout(writer.con) != LAYOUT:
                    continue
                held = writer.con.execute("SELECT records_stamp FROM tree WHERE dir = ?", (rel,)).fetchone()
                if held is None or held[0] != records_stamp:
                    break  # not current: the whole row, below
                touch(writer.con, rel, dir_ctime_ns, listing)
                written += 1
        except sqlite3.Error:
            continue
    else:
        return written
    return record(run_dir)


def ensure(root: Path) -> None:
    """Create an (empty) index at root when no index serves it, so graders write into it from the start."""
    path, _prefix = locate(root)
    if path.exists():
        return
    root.mkdir(parents=True, exist_ok=True)
    try:
        con = connect(path)
        try:
            if read_layout(con) is None:
                create(con)
        finally:
            con.close()
    except sqlite3.Error:
        return  # the first reader builds it
