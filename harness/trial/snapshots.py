"""Snapshots of the entry (or watch) files after each write, with timestamps.

A watcher thread polls the files' (mtime, size, content hash) while the agent runs and copies
every new version to `snapshots/NNN-<name>`, with one line per snapshot in
`snapshots/index.jsonl` (t, file, snapshot, bytes, sha256; `deleted` when the file vanished).
Polling is portable and cheap for a handful of files; a write and a rewrite within one poll
interval show as one version.

`t` is when the write happened, not when the watcher noticed it: the file's mtime, clamped
into the interval since the previous look (an agent cannot date a write outside the window
in which it must have happened). Poll times alone made "ran the check after the last write"
flip with machine load.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from harness.artifacts.names import SNAPSHOT_INDEX
from harness.sandbox.pathsafe import PathEscape, read_inside

INTERVAL_S = 0.05


class Watcher:
    """Polls watched files in a thread; use as a context manager around the agent."""

    def __init__(
        self, workspace: Path, files: Sequence[str], out: Path, *, interval_s: float = INTERVAL_S
    ) -> None:
        self._ws = workspace
        self._files = tuple(files)
        self._out = out
        self._interval = interval_s
        self._stop = threading.Event()
        self._seen: dict[str, str | None] = {}
        self._count = 0
        self._looked = time.time()
        self._thread = threading.Thread(target=self._loop, name="snapshots", daemon=True)

    def __enter__(self) -> Watcher:
        for name in self._files:
            self._seen[name] = self._digest(self._ws / name)
        self._looked = time.time()
        if self._files:
            self._out.mkdir(parents=True, exist_ok=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        if self._files:
            self.poll()

    @property
    def count(self) -> int:
        """Snapshots taken so far."""
        return self._count

    @staticmethod
    def _digest(path: Path) -> str | None:
        try:
            return hashlib.sha256(path.read_bytes()).hexdigest()
        except (FileNotFoundError, IsADirectoryError, PermissionError):
            return None

    def _written(self, name: str, since: float, now: float) -> float:
        try:
            mtime = (self._ws / name).lstat().st_mtime
        except OSError:
            return now  # deleted: it went some time in the window; say when it was seen gone
        return min(max(mtime, since), now)

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            self.poll()

    def poll(self) -> None:
        """Record every watched file whose content changed since the last look."""
        since, now = self._looked, time.time()
        self._looked = now
        for name in self._files:
            try:  # never through a symlink: one to the reference would copy it into the run's artifacts
                data: bytes | None = read_inside(self._ws, name)
            except (OSError, PathEscape):
                data = None
            digest = None if data is None else hashlib.sha256(data).hexdigest()
            if digest == self._seen.get(name):
                continue
            self._seen[name] = digest
            self._count += 1
            row: dict[str, object] = {
                "t": self._written(name, since, now),
                "index": self._count,
                "file": name,
            }
            if data is None:
                row["deleted"] = True
            else:
                snap = f"{self._count:03d}-{name.replace('/', '__')}"
                (self._out / snap).write_bytes(data)
                row.update({"snapshot": snap, "bytes": len(data), "sha256": digest})
            with (self._out / SNAPSHOT_INDEX).open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(row, sort_keys=True) + "\n")
