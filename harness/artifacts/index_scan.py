"""How the results index learns what changed in a tree: every run folder's mtime, found without
reading a record (`harness.artifacts.index` compares them with its rows).

Writing run.json or grade.json the way assay writes every record (write, then rename) changes the
run folder's mtime, so a folder whose mtime the index holds is unchanged, whoever wrote it.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

from harness.artifacts.names import INDEX_FILE, RUN_DIR_FOLDERS, RUN_FILE


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


def scan(root: str, known: dict[str, int]) -> Iterator[tuple[str, int]]:
    """(run folder relative to root, its mtime_ns) for every run under root.

    A folder the index knows as a run is stat'ed, not listed; any other folder is listed: it holds a
    run.json (a new run), or its subfolders are searched. A run's own artifact folders and hidden
    folders are never entered, as in `harness.artifacts.run_tree.find_runs`. Each folder is opened
    once and its children looked up from it (`fstatat`), not by their whole path.
    """
    if "" in known or os.path.lexists(os.path.join(root, RUN_FILE)):
        yield "", os.stat(root).st_mtime_ns
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


def _children(fd: int, rel: str, known: dict[str, int], stack: list[str]) -> Iterator[tuple[str, int]]:
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
            yield child, os.stat(name, dir_fd=fd, follow_symlinks=False).st_mtime_ns
        except OSError:
            continue  # removed while we looked


def known(con: sqlite3.Connection, prefix: str) -> dict[str, int]:
    """The index's runs under prefix (relative to it) -> each run folder's mtime when its row was written."""
    cut = len(prefix)
    if not prefix:
        return dict(con.execute("SELECT dir, dir_mtime_ns FROM tree"))
    # dir >= prefix and dir < prefix + U+10FFFF: the rows under the prefix, by the primary key.
    found = con.execute(
        "SELECT dir, dir_mtime_ns FROM tree WHERE dir >= ? AND dir < ?", (prefix, prefix + "\U0010ffff")
    )
    return {d[cut:]: m for d, m in found}


def differing(index: str, root: str, prefix: str) -> int:
    """How many run folders under root differ from the index's rows under prefix: changed (another
    mtime), new (no row) or gone (a row, no run folder). Reads the index, never writes it: the check
    a reader runs beside its own reading of the index (`harness.artifacts.index_alongside`)."""
    con = sqlite3.connect(f"file:{quote(index)}?mode=ro", uri=True, timeout=60.0)
    try:
        rows = known(con, prefix)
    finally:
        con.close()
    found = 0
    differ = 0
    for rel, mtime_ns in scan(root, rows):
        held = rows.get(rel)
        found += held is not None
        differ += held != mtime_ns
    return differ + len(rows) - found
