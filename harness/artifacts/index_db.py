"""The results index's SQLite file: its layout, connections to it, and the one way rows are written.

`LAYOUT` names the tables and columns (`harness.artifacts.index_rows`) and changes whenever a record
gains a field; `create` lays a file out afresh, `read_layout` says which layout a file has (None:
not an index), `connect` opens one (WAL, a busy timeout), `write` puts rows in and takes removed
runs out in one transaction. What is read and synced through it is `harness.artifacts.index`.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from pathlib import Path

from harness.artifacts.index_rows import JSON_COLUMNS, TABLES, Row

INDEX_SCHEMA = 4
"""Bumped whenever what a row holds changes (3: read_error names incomplete and non-file records;
4: the folder's ctime, not its mtime, and the records' stamp)."""
BUSY_TIMEOUT_S = 60.0
LAYOUT = hashlib.sha256(json.dumps([INDEX_SCHEMA, TABLES, sorted(JSON_COLUMNS)]).encode()).hexdigest()[:16]
"""Changes whenever a record gains a field: an index of another layout is rebuilt, not misread."""


def quote(name: str) -> str:
    """A column name as an SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def _insert(table: str) -> str:
    cols = TABLES[table]
    return f"INSERT OR REPLACE INTO {table} ({', '.join(quote(c) for c in cols)}) VALUES ({', '.join('?' for _ in cols)})"


def write(con: sqlite3.Connection, rows: list[Row], gone: list[str]) -> None:
    """Put rows in and take the runs of `gone` (dirs) out, in one transaction."""
    con.execute("BEGIN IMMEDIATE")
    try:
        _write_rows(con, rows, gone)
    except BaseException:
        if con.in_transaction:
            con.execute("ROLLBACK")  # a connection kept open must not stay inside a failed transaction
        raise
    con.execute("COMMIT")


def touch(con: sqlite3.Connection, run_dir: str, dir_ctime_ns: int, files: str) -> None:
    """A run folder's new ctime and listing (a derived file came or went; its records did not
    change: the row's records' stamp holds), in one transaction."""
    con.execute("BEGIN IMMEDIATE")
    try:
        con.execute(
            "UPDATE tree SET dir_ctime_ns = ?, files = ? WHERE dir = ?", (dir_ctime_ns, files, run_dir)
        )
        _stale(con, [run_dir])
    except BaseException:
        if con.in_transaction:
            con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


def _stale(con: sqlite3.Connection, dirs: list[str]) -> None:
    """A block's cached aggregate is stale as soon as one run under it is written or removed."""
    con.executemany("DELETE FROM facts WHERE dir = ?", [(d,) for d in dirs])
    con.executemany("DELETE FROM aggregates WHERE substr(?, 1, length(block)) = block", [(d,) for d in dirs])
    con.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'")


def _write_rows(con: sqlite3.Connection, rows: list[Row], gone: list[str]) -> None:
    for table in (*TABLES, "facts"):
        con.executemany(f"DELETE FROM {table} WHERE dir = ?", [(d,) for d in gone])
    for table in TABLES:
        con.executemany(_insert(table), [getattr(r, table) for r in rows])
    _stale(con, [*gone, *(r.dir for r in rows)])


def connect(path: Path | str, *, shared: bool = False) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit); `shared`: used from several
    threads, one at a time (the caller holds a lock)."""
    con = sqlite3.connect(
        str(path), timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=not shared
    )
    con.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
    if str(path) != ":memory:":
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("PRAGMA synchronous=NORMAL")
    return con


def create(con: sqlite3.Connection) -> None:
    """Lay the file out afresh in this assay's layout: every table dropped and made again, empty."""
    con.execute("BEGIN IMMEDIATE")
    for table in (*TABLES, "facts", "aggregates", "meta"):
        con.execute(f"DROP TABLE IF EXISTS {table}")
    con.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    for table, cols in TABLES.items():
        # The small tables are stored in path order (no rowid): a sync reads `tree` front to back.
        clustered = " WITHOUT ROWID" if table == "tree" else ""
        con.execute(
            f"CREATE TABLE {table} (dir TEXT PRIMARY KEY, {', '.join(quote(c) for c in cols[1:])}){clustered}"
        )
    con.execute("CREATE TABLE facts (dir TEXT PRIMARY KEY, facts BLOB NOT NULL) WITHOUT ROWID")
    con.execute("CREATE TABLE aggregates (block TEXT PRIMARY KEY, state BLOB NOT NULL) WITHOUT ROWID")
    con.execute(
        "INSERT INTO meta VALUES ('layout', ?), ('created', ?), ('generation', '0')",
        (LAYOUT, repr(time.time())),
    )
    con.execute("COMMIT")


def read_layout(con: sqlite3.Connection) -> str | None:
    """The layout the file was written in; None when it is not an index."""
    try:
        found = con.execute("SELECT value FROM meta WHERE key = 'layout'").fetchone()
    except sqlite3.DatabaseError:
        return None
    return str(found[0]) if found else None
