"""The results index: one SQLite row per run of a tree, so a reader never walks 100,000 run folders.

`<tree>/.assay-index.sqlite` (WAL) holds, per run directory, every scalar field of its run.json and
grade.json as a column (nested sections flattened as `<section>_<field>`, lists and maps as JSON
text), both records verbatim, the scenario's family and split, the files at the run's top, and what
it takes to tell the row is current: the run folder's mtime and each record's size, mtime and hash.

Writers: the grader after each grade.json (`record`, into every index above the run), the Dask
client after installing a run, and `sync`. Readers call `sync` first, which never trusts the file
blindly: a missing, corrupt or differently laid out index is rebuilt from the run directories; else
every folder of the tree that is not a run is listed (new and removed runs) and every run folder is
stat'ed — an atomic write of run.json or grade.json (write, then rename) changes that folder's mtime
— and each run whose folder changed is read again. A regrade through the grader rewrites its row.
Concurrent writers (two grading workers, a report) are serialised by SQLite's lock (busy timeout).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import BaseModel

from harness.artifacts.names import GRADE_FILE, INDEX_FILE, JOB_FILE, RUN_DIR_FOLDERS, RUN_FILE
from harness.artifacts.records import GRADE_SCHEMA, RUN_SCHEMA, Grade, RunRecord
from harness.artifacts.store import FutureSchemaError

INDEX_SCHEMA = 1
BUSY_TIMEOUT_S = 60.0
BATCH = 5000
"""Rows written per transaction while syncing."""
IDENTITY = ("job_id", "job_hash", "matrix", "scenario", "cell", "agent", "trial", "version", "model")
"""run.json fields kept under their own names; the rest of run.json is `run_<field>`."""


class Column(NamedTuple):
    """One column of the runs table taken from a record: its name and where it sits in the record."""

    name: str
    path: tuple[str, ...]
    json: bool
    """Stored as JSON text (a list or a map), else as the scalar itself."""


def _scalar(annotation: Any) -> bool:
    if annotation in (int, float, str, bool, type(None)):
        return True
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return True
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return True
    if origin in (typing.Union, types.UnionType):
        return all(_scalar(a) for a in typing.get_args(annotation))
    return False


def _columns(model: type[BaseModel], rename: dict[str, str], prefix: str) -> list[Column]:
    out: list[Column] = []
    for name, info in model.model_fields.items():
        column = rename.get(name, f"{prefix}{name}")
        ann = info.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            for sub, sub_info in ann.model_fields.items():
                out.append(Column(f"{column}_{sub}", (name, sub), not _scalar(sub_info.annotation)))
        else:
            out.append(Column(column, (name,), not _scalar(ann)))
    return out


RUN_COLUMNS = _columns(RunRecord, {n: n for n in IDENTITY} | {"levels": "levels"}, "run_")
GRADE_COLUMNS = _columns(Grade, {"schema_version": "grade_schema_version"}, "")
TREE_COLUMNS = ("dir", "dir_mtime_ns", "files", "family", "split", "read_error")
"""Table `tree`, small and read by every sync: what it takes to tell a row is current."""
RECORD_FILES = ("run_size", "run_mtime_ns", "run_hash", "grade_size", "grade_mtime_ns", "grade_hash")
RECORDS_COLUMNS = ("dir", *RECORD_FILES, "run_json", "grade_json")
"""Table `records`: both records verbatim (compact), each with its file's size, mtime and hash."""
RECORD_COLUMNS = tuple(c.name for c in (*RUN_COLUMNS, *GRADE_COLUMNS))
RUNS_COLUMNS = ("dir", *RECORD_COLUMNS)
"""Table `runs`: one column per field of run.json and grade.json (what `assay results` shows)."""
JSON_COLUMNS = frozenset(c.name for c in (*RUN_COLUMNS, *GRADE_COLUMNS) if c.json)
TABLES = {"tree": TREE_COLUMNS, "records": RECORDS_COLUMNS, "runs": RUNS_COLUMNS}
LAYOUT = hashlib.sha256(json.dumps([INDEX_SCHEMA, TABLES, sorted(JSON_COLUMNS)]).encode()).hexdigest()[:16]
"""Changes whenever a record gains a field: an index of another layout is rebuilt, not misread."""


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _insert(table: str) -> str:
    cols = TABLES[table]
    return f"INSERT OR REPLACE INTO {table} ({', '.join(_q(c) for c in cols)}) VALUES ({', '.join('?' for _ in cols)})"


class Row(NamedTuple):
    """One run's rows of the three tables (`facts`, a reader's cache, is emptied when they change)."""

    dir: str
    tree: tuple[Any, ...]
    records: tuple[Any, ...]
    runs: tuple[Any, ...]


def _write(con: sqlite3.Connection, rows: list[Row], gone: list[str]) -> None:
    con.execute("BEGIN IMMEDIATE")
    for table in (*TABLES, "facts"):
        con.executemany(f"DELETE FROM {table} WHERE dir = ?", [(d,) for d in gone])
    for table in TABLES:
        con.executemany(_insert(table), [getattr(r, table) for r in rows])
    con.executemany("DELETE FROM facts WHERE dir = ?", [(r.dir,) for r in rows])
    con.execute("COMMIT")


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


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _read_bytes(path: str) -> tuple[bytes, os.stat_result] | None:
    try:
        with open(path, "rb") as fh:
            st = os.fstat(fh.fileno())
            return fh.read(), st
    except FileNotFoundError:
        return None


def _pick(data: dict[str, Any], column: Column) -> Any:
    value: Any = data
    for key in column.path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    if value is None:
        return None
    if column.json:
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))  # a writer that broke the type: kept, not lost
    return value


def _load(raw: bytes, name: str, current: int, run_dir: str, errors: list[str]) -> dict[str, Any]:
    """A record's JSON object; {} with the reason appended to errors when it is not one (a record
    from a newer assay raises FutureSchemaError)."""
    try:
        data = json.loads(raw)
    except ValueError as exc:
        errors.append(f"{name}: {str(exc)[:200]}")
        return {}
    if not isinstance(data, dict):
        errors.append(f"{name}: not a JSON object")
        return {}
    version = data.get("schema_version", 0)
    if isinstance(version, int) and version > current:
        raise FutureSchemaError(
            f"{run_dir}/{name}: schema_version {version} is newer than this assay understands ({current}); upgrade assay"
        )
    return data


class Scenarios:
    """family and split per scenario, from the first job.json read for it."""

    def __init__(self) -> None:
        self.known: dict[str, tuple[str | None, str | None]] = {}

    def lookup(self, scenario: Any, run_dir: str, files: frozenset[str]) -> tuple[str | None, str | None]:
        key = str(scenario)
        if key in self.known or JOB_FILE not in files:
            return self.known.get(key, (None, None))
        try:
            with open(os.path.join(run_dir, JOB_FILE), "rb") as fh:
                job = json.loads(fh.read())
            spec = job.get("scenario", {}) if isinstance(job, dict) else {}
            family, split = spec.get("family"), spec.get("split")
            found = (family if isinstance(family, str) else None, split if isinstance(split, str) else None)
        except (OSError, ValueError):
            found = (None, None)
        self.known[key] = found
        return found


def read_row(run_dir: str, rel: str, scenarios: Scenarios | None = None) -> Row | None:
    """The index rows of one run folder, read from disk; None when it holds no run.json (any more).

    A run.json or grade.json that cannot be read becomes `read_error` on the row (the report counts
    it), never an exception — except one written by a newer assay (FutureSchemaError).
    """
    dir_st = os.stat(run_dir)
    files = frozenset(os.listdir(run_dir))
    run = _read_bytes(os.path.join(run_dir, RUN_FILE)) if RUN_FILE in files else None
    if run is None:
        return None
    grade = _read_bytes(os.path.join(run_dir, GRADE_FILE)) if GRADE_FILE in files else None
    errors: list[str] = []
    run_data = _load(run[0], RUN_FILE, RUN_SCHEMA, run_dir, errors)
    grade_data = _load(grade[0], GRADE_FILE, GRADE_SCHEMA, run_dir, errors) if grade is not None else {}
    family, split = (scenarios or Scenarios()).lookup(run_data.get("scenario"), run_dir, files)
    listing = json.dumps(sorted(n for n in files if not n.startswith(".")))
    return Row(
        dir=rel,
        tree=(rel, dir_st.st_mtime_ns, listing, family, split, "; ".join(errors) or None),
        records=(
            rel,
            run[1].st_size,
            run[1].st_mtime_ns,
            _digest(run[0]),
            grade[1].st_size if grade else None,
            grade[1].st_mtime_ns if grade else None,
            _digest(grade[0]) if grade else None,
            _compact(run_data) if run_data else run[0].decode("utf-8", errors="replace"),
            None
            if grade is None
            else _compact(grade_data)
            if grade_data
            else grade[0].decode("utf-8", "replace"),
        ),
        runs=(
            rel,
            *(_pick(run_data, c) for c in RUN_COLUMNS),
            *(_pick(grade_data, c) if grade_data else None for c in GRADE_COLUMNS),
        ),
    )


def _compact(data: dict[str, Any]) -> str:
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


def _connect(path: Path | str) -> sqlite3.Connection:
    con = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_S, isolation_level=None)
    con.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
    if str(path) != ":memory:":
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("PRAGMA synchronous=NORMAL")
    return con


def _create(con: sqlite3.Connection) -> None:
    con.execute("BEGIN IMMEDIATE")
    for table in (*TABLES, "facts", "meta"):
        con.execute(f"DROP TABLE IF EXISTS {table}")
    con.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    for table, cols in TABLES.items():
        # The small tables are stored in path order (no rowid): a sync reads `tree` front to back.
        clustered = " WITHOUT ROWID" if table == "tree" else ""
        con.execute(
            f"CREATE TABLE {table} (dir TEXT PRIMARY KEY, {', '.join(_q(c) for c in cols[1:])}){clustered}"
        )
    con.execute("CREATE TABLE facts (dir TEXT PRIMARY KEY, facts BLOB NOT NULL) WITHOUT ROWID")
    con.execute("INSERT INTO meta VALUES ('layout', ?), ('created', ?)", (LAYOUT, repr(time.time())))
    con.execute("COMMIT")


def _layout(con: sqlite3.Connection) -> str | None:
    try:
        found = con.execute("SELECT value FROM meta WHERE key = 'layout'").fetchone()
    except sqlite3.DatabaseError:
        return None
    return str(found[0]) if found else None


def locate(root: Path) -> tuple[Path, str]:
    """The index serving root: root's own, else the nearest above it; (index file, root's prefix in it).

    Without one anywhere above, root's own (to be created); the prefix is '' or `a/b/`.
    """
    root = root.resolve()
    for folder in (root, *root.parents):
        candidate = folder / INDEX_FILE
        if candidate.is_file():
            rel = root.relative_to(folder).as_posix()
            return candidate, "" if rel == "." else rel + "/"
    return root / INDEX_FILE, ""


class Index:
    """An open index and the part of the tree it is read for (`prefix`)."""

    def __init__(self, path: Path | str, root: Path, prefix: str) -> None:
        self.path = path
        self.root = root
        self.prefix = prefix
        self.con = _connect(path)

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _where(self) -> tuple[str, tuple[str, ...]]:
        if not self.prefix:
            return "", ()
        # dir >= prefix and dir < prefix + U+10FFFF: the rows under the prefix, by the primary key.
        return " WHERE dir >= ? AND dir < ?", (self.prefix, self.prefix + "\U0010ffff")

    def known(self) -> dict[str, int]:
        """dir (relative to root) -> the run folder's mtime when its row was written."""
        where, params = self._where()
        cut = len(self.prefix)
        return {d[cut:]: m for d, m in self.con.execute(f"SELECT dir, dir_mtime_ns FROM tree{where}", params)}

    def rows(self, table: str, columns: tuple[str, ...]) -> Iterator[tuple[Any, ...]]:
        """A table's rows under root in path order, `dir` (always the first column) relative to root."""
        where, params = self._where()
        cut = len(self.prefix)
        cur = self.con.execute(
            f"SELECT {', '.join(_q(c) for c in ('dir', *columns))} FROM {table}{where} ORDER BY dir", params
        )
        for row in cur:
            yield (row[0][cut:], *row[1:]) if cut else row

    def put_facts(self, facts: list[tuple[str, bytes]]) -> None:
        """Cache a reader's derived form of runs (dir relative to root, blob); dropped when a run changes."""
        if not facts:
            return
        self.con.execute("BEGIN IMMEDIATE")
        self.con.executemany(
            "INSERT OR REPLACE INTO facts VALUES (?, ?)", [(self.prefix + d, blob) for d, blob in facts]
        )
        self.con.execute("COMMIT")

    def drop_facts(self) -> None:
        """Forget every cached fact (their reader's form changed)."""
        self.con.execute("DELETE FROM facts")

    def meta(self, key: str) -> str | None:
        found = self.con.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return str(found[0]) if found else None

    def set_meta(self, key: str, value: str) -> None:
        self.con.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def sync(self) -> SyncStats:
        """Bring the rows under root in line with the run folders (see the module docstring)."""
        t0 = time.perf_counter()
        rebuilt = None
        layout = _layout(self.con)
        if layout != LAYOUT:
            rebuilt = "no index" if layout is None else "the index was written by another assay"
            _create(self.con)
        known = {} if rebuilt else self.known()
        seen: set[str] = set()
        changed: list[tuple[str, str]] = []
        for rel, mtime_ns in _scan(str(self.root), known):
            seen.add(rel)
            if known.get(rel) != mtime_ns:
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
                _write(self.con, rows, [])
                written += len(rows)
                rows = []
        if rows or gone:
            _write(self.con, rows, [self.prefix + d for d in gone])
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


def _scan(root: str, known: dict[str, int]) -> Iterator[tuple[str, int]]:
    """(run folder relative to root, its mtime_ns) for every run under root.

    A folder the index knows as a run is stat'ed, not listed; any other folder is listed: it holds a
    run.json (a new run), or its subfolders are searched. A run's own artifact folders and hidden
    folders are never entered, as in `harness.artifacts.run_tree.find_runs`.
    """
    if "" in known or os.path.isfile(os.path.join(root, RUN_FILE)):
        yield "", os.stat(root).st_mtime_ns
        return
    stack = [""]
    while stack:
        rel = stack.pop()
        folder = os.path.join(root, rel) if rel else root
        try:
            with os.scandir(folder) as entries:
                subdirs = [
                    e
                    for e in entries
                    if e.is_dir(follow_symlinks=False)
                    and not e.name.startswith(".")
                    and e.name not in RUN_DIR_FOLDERS
                ]
        except OSError:
            continue  # vanished or unreadable mid-walk
        for entry in subdirs:
            child = f"{rel}/{entry.name}" if rel else entry.name
            if child in known or os.path.isfile(os.path.join(entry.path, RUN_FILE)):
                try:
                    yield child, entry.stat(follow_symlinks=False).st_mtime_ns
                except OSError:
                    continue
            else:
                stack.append(child)


def open_index(root: Path, *, sync: bool = True) -> tuple[Index, SyncStats | None]:
    """The index serving root, created (or rebuilt) as needed, synced with the tree unless told not to.

    A tree the index cannot be written in (read-only) gets an index in memory for this reader only.
    """
    root = root.resolve()
    if (root / RUN_FILE).is_file():  # one run: read it alone, in memory (an index above keys it differently)
        index = Index(":memory:", root, "")
        return index, index.sync() if sync else None
    path, prefix = locate(root)
    try:
        index = Index(path, root, prefix)
        if _layout(index.con) is None and path.exists() and path.stat().st_size:
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
            con = _connect(path)
            try:
                if _layout(con) == LAYOUT:
                    _write(con, [row], [])
                    written += 1
            finally:
                con.close()
        except sqlite3.Error:
            continue
    return written


def ensure(root: Path) -> None:
    """Create an (empty) index at root when no index serves it, so graders write into it from the start."""
    path, _prefix = locate(root)
    if path.exists():
        return
    root.mkdir(parents=True, exist_ok=True)
    try:
        con = _connect(path)
        try:
            if _layout(con) is None:
                _create(con)
        finally:
            con.close()
    except sqlite3.Error:
        return  # the first reader builds it
