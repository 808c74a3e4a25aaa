"""Snapshots of the entry (or watch) files after each write, with timestamps.

A watcher thread copies every new version of the watched files to `snapshots/NNN-<name>`, one line
each in `snapshots/index.jsonl` (t, file, snapshot, bytes, sha256; `deleted` when the file vanished;
`omitted`, no copy, past `SNAPSHOT_MAX` or the run's `KEPT_MAX`: the agent sets its files' sizes).

A version is taken only once it is settled, never while it is being written: `open(…, "w")`
empties a file before the new text lands, and a look in between would take a half-written
(often empty) file as a version of its own. A look (`harness.trial.looks`) reads a file under a
read lease (`F_SETLEASE`), which the kernel grants only while no process has the file open for
writing and which holds a writer's open back until the read is done: what is read is a file nobody
is writing. Where leases do not work (another filesystem, another owner without CAP_LEASE) a look
is kept only when no write to the file was reported while it was read (inotify: narrows the
window, does not close it, since the kernel reports a write just after it lands), or when two
looks in a row agree (polling).

With inotify (Linux) a file is looked at when a write to it ends (closed after writing, or
renamed into place); the folders on the way to each file are watched, so a file in a folder
created later is seen too. Without it the watcher polls. Either way the last look, after the
agent's process tree is gone, takes the files as they ended. Versions that follow each other
faster than the watcher looks show as one. What the watcher thread cannot write (its disk full)
stops it, and is raised when the watch ends: the trial's error, never a traceback of the thread.

`t` is when the write happened, not when the watcher noticed it: the ctime of the version read
(stated through its descriptor: the path may hold a later write by then), never the mtime, which
the agent sets back at will (a write after the tool ran, dated back before it with `os.utime`, had
made "checked after the last write" pass); nobody can set a ctime back. It is clamped into the
window since the file was last known unchanged, which opens at a time taken before the look that
proved the file unchanged, never after it: a write landing between the look and a later clock
reading would be dated after itself, and after the agent's next turn. Look times alone made "ran
the check after the last write" flip with machine load.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import select
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path, PurePosixPath

from harness.artifacts.names import SNAPSHOT_INDEX
from harness.artifacts.readers import SNAPSHOT_MAX
from harness.trial import inotify, looks
from harness.trial.inotify import Inotify

KEPT_MAX = 256 << 20
"""What the snapshots of one run may hold in all (bytes); later versions are recorded, not kept."""
INTERVAL_S = 0.05  # how often the poller looks (without inotify)
RETRY_MS = 10
"""How soon a file found busy with no write under way is looked at again (inotify)."""

_ENDED = inotify.CLOSE_WRITE | inotify.MOVED_TO | inotify.MOVED_FROM | inotify.DELETE | inotify.ATTRIB
"""Events after which a file is looked at: a write ended, it was renamed in or out, removed."""
_GONE = inotify.DELETE_SELF | inotify.MOVE_SELF | inotify.IGNORED


class Watcher:
    """Watches files in a thread; use as a context manager around the agent.

    Args:
        workspace: The folder the files are relative to.
        files: Workspace-relative paths to watch.
        out: The snapshots folder.
        interval_s: How often the poller looks, when there is no inotify.
        events: Use inotify where there is one (False: always poll).
        leases: Prove a version settled by a read lease where the kernel grants one (False: as
            where it does not).
        keep: What the snapshots folder may hold in all (bytes), earlier sessions' included.
    """

    def __init__(
        self,
        workspace: Path,
        files: Sequence[str],
        out: Path,
        *,
        interval_s: float = INTERVAL_S,
        events: bool = True,
        leases: bool = True,
        keep: int = KEPT_MAX,
    ) -> None:
        self._ws = workspace
        self._files = tuple(files)
        self._out = out
        self._interval = interval_s
        self._events = events
        self._leases = leases
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._seen: dict[str, str | None] = {}
        self._quiet: dict[str, float] = {}
        """When each file was last known unchanged: the earliest its next write can be dated."""
        self._candidate: dict[str, str | None] = {}
        self._count = 0
        self._left = self._keep = keep
        self._notify: Inotify | None = None
        self._folders: dict[int, str] = {}
        self._watched_files: dict[int, str] = {}
        self._writing: set[str] = set()
        self._due: set[str] = set()
        self._wake = os.pipe()
        os.set_blocking(self._wake[1], False)
        self._failed: OSError | None = None  # what the watcher thread could not write: raised on exit
        self._thread = threading.Thread(target=self._loop, name="snapshots", daemon=True)

    def __enter__(self) -> Watcher:
        if self._files and self._events:
            self._notify = Inotify.open()
            if self._notify is not None:
                self._watch_folders()
        now = time.time()
        for name in self._files:
            look = looks.read(self._ws, name, lease=False)
            self._seen[name] = self._digest(look)
            self._quiet[name] = now
            if look.there:
                self._watch_file(name)
        if self._files:
            self._out.mkdir(parents=True, exist_ok=True)
            with os.scandir(self._out) as kept:  # an earlier session's snapshots count too
                self._left -= sum(e.stat(follow_symlinks=False).st_size for e in kept if e.is_file())
            with contextlib.suppress(FileNotFoundError), (self._out / SNAPSHOT_INDEX).open("rb") as rows:
                self._count = sum(1 for _ in rows)  # numbered on from them: none is overwritten
            self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        """Takes the files as they ended; raises what the watcher could not write (a full disk)."""
        self._stop.set()
        self._nudge()
        if self._thread.is_alive():
            self._thread.join()
        try:
            if self._files and self._failed is None:
                with self._lock:  # nothing writes any more: the files as they ended
                    self._look(self._files, settled=True)
        finally:
            if self._notify is not None:
                self._notify.close()
            for fd in self._wake:
                os.close(fd)
        if self._failed is not None and exc is None:
            raise self._failed

    @property
    def count(self) -> int:
        """Snapshots in the folder so far (earlier sessions' included: they are numbered on)."""
        return self._count

    def _loop(self) -> None:
        try:
            self._follow()
        except OSError as exc:  # in this thread it would only be printed: the trial raises it on exit
            self._failed = exc

    def _follow(self) -> None:
        if self._notify is None:
            while not self._stop.wait(self._interval):
                self.poll()
            return
        waiter = select.poll()
        waiter.register(self._notify.fd, select.POLLIN)
        waiter.register(self._wake[0], select.POLLIN)
        while not self._stop.is_set():
            with self._lock:  # a file found busy is looked at again soon, event or not
                retry = bool(self._due - self._writing)
            for fd, _ in waiter.poll(RETRY_MS if retry else None):
                if fd == self._wake[0]:
                    os.read(fd, 4096)
            if not self._stop.is_set():
                self.poll()

    def poll(self) -> None:
        """Record every watched file whose new version is settled."""
        with self._lock:
            if self._notify is None:
                self._look(self._files, settled=False)
                return
            self._drain()
            ready = sorted(self._due - self._writing)
            self._due.difference_update(ready)
            looked = time.time()
            found = {name: looks.read(self._ws, name, lease=self._leases) for name in ready}
            self._drain(looking=found)  # no lease: a write that began as we read made it half-written
            # Busy: still open for writing. The kernel reports a write's end (close) a moment before
            # it drops the writer's count, so a look woken by that report can find the file busy, and
            # no later event will come: it stays due and is looked at again.
            busy = [name for name, look in found.items() if look.busy]
            self._due.update(busy)
            if busy and threading.current_thread() is not self._thread:
                self._nudge()  # the thread may be waiting for events with no timeout
            self._record(
                {
                    name: look
                    for name, look in found.items()
                    if not look.busy and (look.proven or name not in self._writing)
                },
                looked=looked,
            )

    def _nudge(self) -> None:
        """Wake the watcher thread (the pipe never blocks: a full one is awake enough)."""
        with contextlib.suppress(BlockingIOError):
            os.write(self._wake[1], b"r")

    # -- inotify ---------------------------------------------------------------------------

    def _watch_folders(self) -> None:
        """Watch every existing folder on the way to a watched file (the workspace included)."""
        assert self._notify is not None
        folders = {""} | {p.as_posix() for f in self._files for p in PurePosixPath(f).parents if p.parts}
        for folder in sorted(folders):
            wd = self._notify.watch(self._ws / folder, inotify.FOLDER_EVENTS)
            if wd is not None:
                self._folders[wd] = folder

    def _under(self, folder: str) -> list[str]:
        return [f for f in self._files if PurePosixPath(f).is_relative_to(folder)] if folder else []

    def _drain(self, *, looking: Iterable[str] = ()) -> None:
        """Take the queued events: which files are being written, which are due a look."""
        assert self._notify is not None
        # Before the read: a file with no event in it was unchanged up to the read, not up to
        # whenever this thread runs again (a write in between would be dated after itself).
        now = time.time()
        events = list(self._notify.read())
        touched: set[str] = set()
        for event in events:
            if event.mask & inotify.Q_OVERFLOW:  # events were lost: look at everything again
                self._due.update(self._files)
                self._writing.clear()
                self._watch_folders()
                continue
            if event.wd in self._watched_files:
                name = self._watched_files[event.wd]
                if event.mask & inotify.IGNORED:
                    del self._watched_files[event.wd]
                touched.add(name)
                self._mark(name, event.mask)
                continue
            folder = self._folders.get(event.wd)
            if folder is None:
                continue
            if event.mask & _GONE:  # the folder itself was removed or renamed
                if event.mask & inotify.IGNORED:
                    del self._folders[event.wd]
                self._due.update(self._under(folder))
                continue
            rel = f"{folder}/{event.name}" if folder else event.name
            if rel in self._files:
                touched.add(rel)
                self._mark(rel, event.mask)
            elif event.mask & inotify.ISDIR and (inside := self._under(rel)):
                touched.update(inside)
                self._due.update(inside)
                if event.mask & (inotify.CREATE | inotify.MOVED_TO):
                    self._watch_folders()  # the new folder and any below it; then look: a file
                    # may have been written there before the watch was in place
        busy = touched | self._writing | self._due | set(looking)
        for name in self._files:
            if name not in busy:  # unchanged up to now: a later write is dated after this
                self._quiet[name] = now

    def _mark(self, name: str, mask: int) -> None:
        if mask & inotify.MODIFY:
            self._writing.add(name)
        if mask & _ENDED:
            if mask & ~inotify.ATTRIB:
                self._writing.discard(name)
            self._due.add(name)

    # -- looking and recording -------------------------------------------------------------

    @staticmethod
    def _digest(look: looks.Look) -> str | None:
        if look.large is not None:
            return f"large:{look.large}"
        return None if look.data is None else hashlib.sha256(look.data).hexdigest()

    def _look(self, names: Iterable[str], *, settled: bool) -> None:
        """Look at files now: a new version is kept when settled, leased, or seen twice in a row."""
        now = time.time()
        kept: dict[str, looks.Look] = {}
        for name in names:
            look = looks.read(self._ws, name, lease=self._leases and not settled)
            if look.busy:
                continue
            digest = self._digest(look)
            if digest == self._seen.get(name):
                self._candidate.pop(name, None)
                self._quiet[name] = now
            elif settled or look.proven or self._candidate.get(name, "") == digest:
                kept[name] = look
            else:
                self._candidate[name] = digest
        self._record(kept, looked=now)

    def _record(self, versions: dict[str, looks.Look], *, looked: float) -> None:
        """Keep the new versions read at `looked` (the time before the reads began)."""
        now = time.time()
        for name, look in versions.items():
            data = look.data
            digest = self._digest(look)
            self._candidate.pop(name, None)
            if digest == self._seen.get(name):
                continue
            self._seen[name] = digest
            self._count += 1
            row: dict[str, object] = {"t": self._written(name, look, now), "index": self._count, "file": name}
            if look.large is not None:
                why = f"larger than {SNAPSHOT_MAX:,} bytes"
                row.update({"bytes": int(look.large.split(":")[0]), "omitted": why})
            elif data is None:
                row["deleted"] = True
            elif len(data) > self._left:
                why = f"past the {self._keep:,} bytes of snapshots a run keeps"
                row.update({"bytes": len(data), "sha256": digest, "omitted": why})
            else:
                snap = f"{self._count:03d}-{name.replace('/', '__')}"
                (self._out / snap).write_bytes(data)
                self._left -= len(data)
                row.update({"snapshot": snap, "bytes": len(data), "sha256": digest})
            with (self._out / SNAPSHOT_INDEX).open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(row, sort_keys=True) + "\n")
            self._quiet[name] = looked  # the version read then: a later write is dated after it
            if look.there:
                self._watch_file(name)

    def _watch_file(self, name: str) -> None:
        """Watch the file itself too: a write through a hard link elsewhere reaches its inode."""
        if self._notify is not None:
            wd = self._notify.watch(self._ws / name, inotify.FILE_EVENTS)
            if wd is not None and wd not in self._folders:
                self._watched_files[wd] = name

    def _written(self, name: str, look: looks.Look, now: float) -> float:
        since = self._quiet.get(name, now)
        if look.changed is None:
            return now  # deleted: it went some time in the window; say when it was seen gone
        return min(max(look.changed, since), now)
