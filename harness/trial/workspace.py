"""A fresh workspace per trial, its baseline, and what changed in it.

The seed is copied with a tar pipe (measured here faster than `cp -a` and `shutil.copytree`
on a 2,000-file seed; see benchmarks/bench_runner.py), a small one (`SMALL_TREE`) in-process. Hardlinks are never used: an agent
writing through one would change the seed for every later trial.

The baseline is a stat manifest, not a git commit (a `git add` of a 2,000-file seed costs
more than a second): after provisioning, every file's (size, mtime, ctime, mode) is recorded
in `<run>/.assay/baseline.json`, and the few files provisioning made different from the seed
are copied to `<run>/.assay/baseline/`. A file is changed when its stat differs and its
content (or executable bit) differs from the baseline version — ctime cannot be set back by
the agent, so a write that restores the mtime is still seen. The seed (read-only, in the
project) plus those copies are the old side of diff.patch (built by `harness.trial.patch`).

Reading the tree back never trusts its shape: one walk on folder descriptors
(`harness.sandbox.neutralise.walk_tree`; reads and copies by `harness.sandbox.fdtree`),
relative names only, FIFOs, sockets and devices never opened — so a path longer than
PATH_MAX, a name with a newline or a FIFO where the entry file was leave a run to grade,
never a crash of the harness.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
import subprocess
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from harness.artifacts.names import ANSWER_FILE, META_DIR, WORKSPACE_DIR
from harness.sandbox import fdtree, neutralise
from harness.sandbox.pathsafe import glob_regex

MANIFEST = "baseline.json"
COPIES = "baseline"
"""Inside `.assay/`: the baseline versions that differ from the seed."""
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC

Stat = tuple[int, int, int, int]
"""(size, mtime_ns, ctime_ns, mode)"""


class WorkspaceError(RuntimeError):
    """The workspace could not be prepared or read back."""


@dataclass(frozen=True)
class Workspace:
    """One trial's working tree and its baseline."""

    root: Path
    seed: Path
    meta: Path
    """`<run>/.assay`: the baseline manifest and copies (never visible as workspace files)."""
    exclude: tuple[str, ...] = ()
    """Workspace-relative paths never tracked (read-only links)."""

    @property
    def answer(self) -> Path:
        """Where the agent writes answer.json (always writable, checked by `answer` checks)."""
        return self.root / ANSWER_FILE


SMALL_TREE = 64
"""A tree of at most this many files, folders and links is copied in this process: the tar pipe
starts two programs, each about a millisecond of CPU here, more than copying a few files costs."""


def _small(root: Path, limit: int = SMALL_TREE) -> bool:
    """True when root holds at most `limit` entries, each a file, folder or symlink (a FIFO or
    device goes through tar, which recreates it instead of opening it)."""
    count, folders = 0, [root]
    while folders:
        with os.scandir(folders.pop()) as entries:
            for entry in entries:
                count += 1
                if count > limit:
                    return False
                if entry.is_dir(follow_symlinks=False):
                    folders.append(Path(entry.path))
                elif not (entry.is_file(follow_symlinks=False) or entry.is_symlink()):
                    return False
    return True


def copy_tree(src: Path, dest: Path) -> None:
    """Copy a folder's contents into dest (created), keeping modes, times and symlinks."""
    dest.mkdir(parents=True, exist_ok=True)
    if shutil.which("tar") and not _small(src):
        pack = subprocess.Popen(["tar", "-C", str(src), "-cf", "-", "."], stdout=subprocess.PIPE)
        unpack = subprocess.run(
            ["tar", "-C", str(dest), "-xf", "-"], stdin=pack.stdout, capture_output=True, check=False
        )
        assert pack.stdout is not None
        pack.stdout.close()
        if pack.wait() == 0 and unpack.returncode == 0:
            return
    shutil.copytree(src, dest, symlinks=True, dirs_exist_ok=True)


def _key(st: os.stat_result) -> Stat:
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode)


def create(seed: Path, run_dir: Path, *, exclude: Sequence[str] = ()) -> Workspace:
    """Copy the seed into `<run_dir>/workspace` (the baseline comes later, after provisioning)."""
    if not seed.is_dir():
        raise WorkspaceError(f"seed folder {seed} does not exist")
    root = run_dir / WORKSPACE_DIR
    copy_tree(seed, root)
    return Workspace(root=root, seed=seed.resolve(), meta=run_dir / META_DIR, exclude=tuple(exclude))


class Roots:
    """Descriptors of the workspace, the seed and the baseline copies, for *at() calls with
    relative paths (never longer than a path inside the tree, whatever the run dir's depth)."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = os.open(ws.root, _DIR)
        self.seed = os.open(ws.seed, _DIR)
        copies = ws.meta / COPIES
        copies.mkdir(parents=True, exist_ok=True)
        self.copies = os.open(copies, _DIR)

    def close(self) -> None:
        for fd in (self.ws, self.seed, self.copies):
            os.close(fd)

    def old(self, rel: bytes) -> tuple[int, os.stat_result] | None:
        """Where the baseline version of `rel` lives (a copy, else the seed) and its lstat."""
        for fd in (self.copies, self.seed):
            try:
                return fd, os.stat(rel, dir_fd=fd, follow_symlinks=False)
            except OSError:  # absent, or too long to name even relative to the root
                continue
        return None


def _same(
    new_fd: int, new: bytes, new_st: os.stat_result, old_fd: int, old: bytes, old_st: os.stat_result
) -> bool:
    """Same kind, executable bit and content (a FIFO, socket or device is never opened)."""
    if stat.S_IFMT(new_st.st_mode) != stat.S_IFMT(old_st.st_mode):
        return False
    if (new_st.st_mode & 0o111 != 0) != (old_st.st_mode & 0o111 != 0):
        return False
    if stat.S_ISLNK(new_st.st_mode):
        return os.readlink(new, dir_fd=new_fd) == os.readlink(old, dir_fd=old_fd)
    if not stat.S_ISREG(new_st.st_mode):
        return True  # the same odd kind at the same place: nothing readable changed
    if new_st.st_size != old_st.st_size:
        return False
    a, b = fdtree.open_regular(new, new_fd), fdtree.open_regular(old, old_fd)
    try:
        while True:
            ca, cb = os.read(a, 1 << 20), os.read(b, 1 << 20)
            if ca != cb:
                return False
            if not ca:
                return True
    finally:
        os.close(a)
        os.close(b)


def _matches_seed(entry: neutralise.TreeEntry, seed_fd: int, seed_st: os.stat_result) -> bool:
    try:
        return _same(entry.dir_fd, entry.name, entry.st, seed_fd, entry.rel, seed_st)
    except OSError:
        return False


def _entries(ws: Workspace) -> Iterator[neutralise.TreeEntry]:
    """Every non-folder entry of the workspace (read-only links excluded), in one pass."""
    skip = frozenset(os.fsencode(e.strip("/")) for e in ws.exclude)
    return (e for e in neutralise.walk_tree(ws.root, skip=skip) if not stat.S_ISDIR(e.st.st_mode))


def commit_baseline(ws: Workspace) -> None:
    """Record the workspace as it is now; later changes and diffs are against this state."""
    ws.meta.mkdir(parents=True, exist_ok=True)
    neutralise.remove_tree(ws.meta / COPIES, ignore_errors=True)
    roots = Roots(ws)
    manifest: dict[str, Stat] = {}
    made: set[bytes] = set()
    try:
        for entry in _entries(ws):
            manifest[os.fsdecode(entry.rel)] = _key(entry.st)
            try:
                seed_st = os.stat(entry.rel, dir_fd=roots.seed, follow_symlinks=False)
            except OSError:
                seed_st = None
            # The copy keeps the seed's size, mtime and mode; anything provisioning wrote does not.
            if (
                seed_st is not None
                and _key(seed_st)[:2] == _key(entry.st)[:2]
                and seed_st.st_mode == entry.st.st_mode
            ):
                continue
            if seed_st is not None and _matches_seed(entry, roots.seed, seed_st):
                continue
            if stat.S_ISREG(entry.st.st_mode) or stat.S_ISLNK(entry.st.st_mode):
                with contextlib.suppress(OSError):  # a path too long to copy: its diff is omitted
                    fdtree.put(entry.dir_fd, entry.name, roots.copies, entry.rel, link=False, made=made)
    finally:
        roots.close()
    (ws.meta / MANIFEST).write_text(json.dumps(manifest, sort_keys=True), encoding="utf-8")


def read_manifest(ws: Workspace) -> dict[str, Stat]:
    data = json.loads((ws.meta / MANIFEST).read_text(encoding="utf-8"))
    return {k: (v[0], v[1], v[2], v[3]) for k, v in data.items()}


def baseline_file(ws: Workspace, rel: str) -> Path | None:
    """The baseline version of a workspace path, or None when it did not exist."""
    if rel not in read_manifest(ws):
        return None
    copy = ws.meta / COPIES / rel
    return copy if copy.exists() or copy.is_symlink() else ws.seed / rel


class Change(NamedTuple):
    """One path changed since the baseline."""

    rel: str
    """Workspace-relative, surrogate-escaped where the name is not UTF-8 (`os.fsdecode`)."""
    old: str | None
    """Its kind in the baseline (file, symlink, fifo, ...), None when it did not exist."""
    new: str | None
    """Its kind now, None when it was deleted."""
    mode: int = 0
    """Its st_mode now."""
    size: int = 0
    """Its size now (bytes; of a sparse file, as read)."""


def scan(ws: Workspace) -> list[Change]:
    """Every path added, modified or deleted since the baseline, sorted, in one walk.

    Content is read only where the stat differs from the baseline's (a FIFO, socket or device
    is compared by kind, never opened).
    """
    manifest = read_manifest(ws)
    changed: list[Change] = []
    seen: set[str] = set()
    roots = Roots(ws)
    try:
        for entry in _entries(ws):
            rel = os.fsdecode(entry.rel)
            seen.add(rel)
            before = manifest.get(rel)
            if before == _key(entry.st):
                continue
            old = roots.old(entry.rel) if before is not None else None
            try:
                same = old is not None and _same(
                    entry.dir_fd, entry.name, entry.st, old[0], entry.rel, old[1]
                )
            except OSError:
                same = False  # unreadable now: report it changed rather than lose it
            if not same:
                was = neutralise.kind_of(before[3]) if before is not None else None
                kind = neutralise.kind_of(entry.st.st_mode)
                changed.append(Change(rel, was, kind, entry.st.st_mode, entry.st.st_size))
    finally:
        roots.close()
    changed.extend(
        Change(rel, neutralise.kind_of(st[3]), None) for rel, st in manifest.items() if rel not in seen
    )
    return sorted(changed)


def changes(ws: Workspace) -> list[str]:
    """Workspace-relative paths added, modified or deleted since the baseline, sorted."""
    return [change.rel for change in scan(ws)]


def reset(ws: Workspace) -> None:
    """Put the workspace back to the baseline (before a retried attempt).

    Whatever the agent left at a changed path goes (a folder where a file was included);
    a path too long to name even relative to the workspace is left where it is.
    """
    manifest = read_manifest(ws)
    roots = Roots(ws)
    try:
        for rel in changes(ws):
            relb = os.fsencode(rel)
            with contextlib.suppress(OSError):
                neutralise.remove_tree(relb, dir_fd=roots.ws)
            old = roots.old(relb) if rel in manifest else None
            if old is not None:
                with contextlib.suppress(OSError):
                    fdtree.put(old[0], relb, roots.ws, relb, link=False)
    finally:
        roots.close()
    commit_baseline(ws)


def unsafe_edits(
    changed: Iterable[str], writable: Sequence[str], *, always: Sequence[str] = (ANSWER_FILE,)
) -> list[str]:
    """Changed paths that no `writable` glob (nor an always-writable file) covers."""
    patterns = [glob_regex(p) for p in writable]
    allowed = set(always)
    return [p for p in changed if p not in allowed and not any(rx.match(p) for rx in patterns)]
