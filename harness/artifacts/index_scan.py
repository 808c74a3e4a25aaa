"""How the results index learns what changed in a tree: every run folder's stat, found without
reading a record (`harness.artifacts.index` compares them with its rows).

A run's stat is its folder's ctime (a file came, went or was renamed over: the way assay writes
every record) and its records' stamp: run.json's and grade.json's inode, size, mtime and ctime. A
record edited in place, truncated or damaged keeps the folder's ctime and its own inode, but not
its own ctime; and a ctime, unlike a mtime, nobody can set back (`os.utime` sets the mtime and
moves the ctime on). So a run whose stat the index holds is unchanged, whoever wrote it and
however, except for a change within one tick of the kernel's clock after the row was read.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

from harness.artifacts.names import GRADE_FILE, INDEX_FILE, RUN_DIR_FOLDERS, RUN_FILE

Stat = tuple[int, int]
"""A run folder's (ctime_ns, records' stamp): what the index holds to tell its row is current."""
STAMPED = (RUN_FILE, GRADE_FILE)
"""The records whose stat is a run's stamp (the rows are read from them)."""


def stamp(folder: str, dir_fd: int | None = None) -> int:
    """The stamp of a run folder's records (`STAMPED`): a 64-bit hash of each one's inode, size,
    mtime and ctime (or of its absence), taken without reading it. Python's hash of a tuple of
    integers is the same in every process of one Python version (only texts' are salted); another
    version's differing stamps make a row read again, never a change missed."""
    parts: list[int] = []
    for name in STAMPED:
        try:
            st = os.stat(f"{folder}/{name}", dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            parts.append(-1)
            continue
        except (
            OSError
        ) as exc:  # not a folder any more, say: a stamp of its own, checked again when it differs
            parts.append(-2 - (exc.errno or 0))
            continue
        parts += (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    return hash(tuple(parts))


def stat_of(folder: str, dir_fd: int | None = None) -> Stat:
    """A run folder's `Stat` (root itself, `dir_fd` None, through a link; a child of `dir_fd` not).
    Taken before the folder's records are read: whatever changes meanwhile is read again next time."""
    records = stamp(folder, dir_fd)
    return os.stat(folder, dir_fd=dir_fd, follow_symlinks=dir_fd is None).st_ctime_ns, records


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


def scan(root: str, known: dict[str, Stat]) -> Iterator[tuple[str, Stat]]:
    """(run folder relative to root, its `Stat`) for every run under root.

    A folder the index knows as a run is stat'ed, not listed; any other folder is listed: it holds a
    run.json (a new run), or its subfolders are searched. A run's own artifact folders and hidden
    folders are never entered, as in `harness.artifacts.run_tree.find_runs`. Each folder is opened
    once and its children looked up from it (`fstatat`), not by their whole path.
    """
    if "" in known or os.path.lexists(os.path.join(root, RUN_FILE)):
        yield "", stat_of(root)
        return
    stack = [""]
    while stack:
        rel = stack.pop()
        try:
            fd = os.open(os.path.join(root, rel) if rel else root, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            continue  # vanished or unreadable mid-walk
        try:
            yield from _children(fd, rel, known, stack)
        finally:
            os.close(fd)


def _children(fd: int, rel: str, known: dict[str, Stat], stack: list[str]) -> Iterator[tuple[str, Stat]]:
    """The runs among one open folder's children; the other folders go on the stack."""
    prefix = f"{rel}/" if rel else ""
    try:
        with os.scandir(fd) as entries:
            subdirs = [
                e.name
                for e in entries
                if e.is_dir(follow_symlinks=False)
                and not e.name.startswith(".")
                and e.name not in RUN_DIR_FOLDERS
            ]
    except OSError:
        return
    for name in subdirs:
        child = prefix + name
        if child not in known:
            try:  # whatever its kind: a run.json that is not a file is an unreadable run, counted
                os.stat(f"{name}/{RUN_FILE}", dir_fd=fd, follow_symlinks=False)
                is_run = True
            except OSError:
                is_run = False
            if not is_run:
                stack.append(child)
                continue
        try:
            yield child, stat_of(name, dir_fd=fd)
        except OSError:
            continue  # removed while we looked


def known(con: sqlite3.Connection, prefix: str) -> dict[str, Stat]:
    """The index's runs under prefix (relative to it) -> each run folder's `Stat` when its row was written."""
    cut = len(prefix)
    if not prefix:
        return {d: (m, r) for d, m, r in con.execute("SELECT dir, dir_ctime_ns, records_stamp FROM tree")}
    # dir >= prefix and dir < prefix + U+10FFFF: the rows under the prefix, by the primary key.
    found = con.execute(
        "SELECT dir, dir_ctime_ns, records_stamp FROM tree WHERE dir >= ? AND dir < ?",
        (prefix, prefix + "\U0010ffff"),
    )
    return {d[cut:]: (m, r) for d, m, r in found}


def differing(index: str, root: str, prefix: str) -> int:
    """How many run folders under root differ from the index's rows under prefix: changed (another
    stat), new (no row) or gone (a row, no run folder). Reads the index, never writes it: the check
    a reader runs beside its own reading of the index (`harness.artifacts.index_alongside`)."""
    con = sqlite3.connect(f"file:{quote(index)}?mode=ro", uri=True, timeout=60.0)
    try:
        rows = known(con, prefix)
    finally:
        con.close()
    found = 0
    differ = 0
    for rel, stat in scan(root, rows):
        held = rows.get(rel)
        found += held is not None
        differ += held != stat
    return differ + len(rows) - found
