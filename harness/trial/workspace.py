"""A fresh workspace per trial, its baseline, and what changed in it.

The seed is copied with a tar pipe (measured here faster than `cp -a` and `shutil.copytree`
on a 2,000-file seed; see benchmarks/bench_runner.py). Hardlinks are never used: an agent
writing through one would change the seed for every later trial.

The baseline is a stat manifest, not a git commit (a `git add` of a 2,000-file seed costs
more than a second): after provisioning, every file's (size, mtime, ctime, mode) is recorded
in `<run>/.assay/baseline.json`, and the few files provisioning made different from the seed
are copied to `<run>/.assay/baseline/`. A file is changed when its stat differs and its
content (or executable bit) differs from the baseline version — ctime cannot be set back by
the agent, so a write that restores the mtime is still seen. The seed (read-only, in the
project) plus those copies are the old side of diff.patch.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.artifacts.names import ANSWER_FILE, META_DIR, WORKSPACE_DIR
from harness.sandbox.pathsafe import glob_regex

MANIFEST = "baseline.json"
_GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LC_ALL": "C",
}

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


def copy_tree(src: Path, dest: Path) -> None:
    """Copy a folder's contents into dest (created), keeping modes, times and symlinks."""
    dest.mkdir(parents=True, exist_ok=True)
    if shutil.which("tar"):
        pack = subprocess.Popen(["tar", "-C", str(src), "-cf", "-", "."], stdout=subprocess.PIPE)
        unpack = subprocess.run(
            ["tar", "-C", str(dest), "-xf", "-"], stdin=pack.stdout, capture_output=True, check=False
        )
        assert pack.stdout is not None
        pack.stdout.close()
        if pack.wait() == 0 and unpack.returncode == 0:
            return
    shutil.copytree(src, dest, symlinks=True, dirs_exist_ok=True)


def _walk(root: Path, exclude: Sequence[str]) -> Iterator[tuple[str, os.stat_result]]:
    skip = {e.strip("/") for e in exclude}
    stack = [""]
    while stack:
        rel_dir = stack.pop()
        try:
            entries = list(os.scandir(root / rel_dir))
        except (FileNotFoundError, NotADirectoryError):
            continue
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            if rel in skip:
                continue
            st = entry.stat(follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                stack.append(rel)
            else:
                yield rel, st


def _key(st: os.stat_result) -> Stat:
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode)


def create(seed: Path, run_dir: Path, *, exclude: Sequence[str] = ()) -> Workspace:
    """Copy the seed into `<run_dir>/workspace` (the baseline comes later, after provisioning)."""
    if not seed.is_dir():
        raise WorkspaceError(f"seed folder {seed} does not exist")
    root = run_dir / WORKSPACE_DIR
    copy_tree(seed, root)
    return Workspace(root=root, seed=seed.resolve(), meta=run_dir / META_DIR, exclude=tuple(exclude))


def _same_content(a: Path, b: Path) -> bool:
    try:
        sa, sb = a.lstat(), b.lstat()
    except FileNotFoundError:
        return False
    if stat.S_IFMT(sa.st_mode) != stat.S_IFMT(sb.st_mode) or (sa.st_mode & 0o111 != 0) != (
        sb.st_mode & 0o111 != 0
    ):
        return False
    if stat.S_ISLNK(sa.st_mode):
        return os.readlink(a) == os.readlink(b)
    if sa.st_size != sb.st_size:
        return False
    with a.open("rb") as fa, b.open("rb") as fb:
        while True:
            ca, cb = fa.read(1 << 20), fb.read(1 << 20)
            if ca != cb:
                return False
            if not ca:
                return True


def commit_baseline(ws: Workspace) -> None:
    """Record the workspace as it is now; later changes and diffs are against this state."""
    copies = ws.meta / "baseline"
    manifest: dict[str, Stat] = {}
    for rel, st in _walk(ws.root, ws.exclude):
        manifest[rel] = _key(st)
        try:
            seed_st = (ws.seed / rel).lstat()
        except FileNotFoundError:
            seed_st = None
        # The copy keeps the seed's size, mtime and mode; anything provisioning wrote does not.
        if seed_st is not None and _key(seed_st)[:2] == _key(st)[:2] and seed_st.st_mode == st.st_mode:
            continue
        if not _same_content(ws.root / rel, ws.seed / rel):
            (copies / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ws.root / rel, copies / rel, follow_symlinks=False)
    ws.meta.mkdir(parents=True, exist_ok=True)
    (ws.meta / MANIFEST).write_text(json.dumps(manifest, sort_keys=True), encoding="utf-8")


def _manifest(ws: Workspace) -> dict[str, Stat]:
    data = json.loads((ws.meta / MANIFEST).read_text(encoding="utf-8"))
    return {k: (v[0], v[1], v[2], v[3]) for k, v in data.items()}


def baseline_file(ws: Workspace, rel: str) -> Path | None:
    """The baseline version of a workspace path, or None when it did not exist."""
    if rel not in _manifest(ws):
        return None
    copy = ws.meta / "baseline" / rel
    return copy if copy.exists() or copy.is_symlink() else ws.seed / rel


def changes(ws: Workspace) -> list[str]:
    """Workspace-relative paths added, modified or deleted since the baseline, sorted."""
    manifest = _manifest(ws)
    changed: list[str] = []
    seen: set[str] = set()
    for rel, st in _walk(ws.root, ws.exclude):
        seen.add(rel)
        before = manifest.get(rel)
        if before == _key(st):
            continue
        old = baseline_file(ws, rel) if before is not None else None
        if old is None or not _same_content(ws.root / rel, old):
            changed.append(rel)
    changed.extend(rel for rel in manifest if rel not in seen)
    return sorted(changed)


def _file_diff(old: Path | None, new: Path | None, rel: str) -> bytes:
    argv = [
        "git",
        "diff",
        "--no-index",
        "--binary",
        "--no-color",
        str(old or "/dev/null"),
        str(new or "/dev/null"),
    ]
    out = subprocess.run(argv, env=_GIT_ENV, capture_output=True, check=False).stdout
    lines = out.split(b"\n")
    relb = rel.encode("utf-8", errors="surrogateescape")
    for i, line in enumerate(lines[:6]):
        if line.startswith(b"diff --git "):
            lines[i] = b"diff --git a/" + relb + b" b/" + relb
        elif line.startswith(b"--- a/"):
            lines[i] = b"--- a/" + relb
        elif line.startswith(b"+++ b/"):
            lines[i] = b"+++ b/" + relb
    return b"\n".join(lines)


def diff(ws: Workspace, changed: Iterable[str] | None = None) -> bytes:
    """A binary-safe unified patch (git format) of everything changed since the baseline."""
    parts = []
    for rel in changes(ws) if changed is None else changed:
        new = ws.root / rel
        parts.append(
            _file_diff(baseline_file(ws, rel), new if new.exists() or new.is_symlink() else None, rel)
        )
    return b"".join(parts)


def reset(ws: Workspace) -> None:
    """Put the workspace back to the baseline (before a retried attempt)."""
    for rel in changes(ws):
        target = ws.root / rel
        if target.is_symlink() or target.exists():
            target.unlink()
        old = baseline_file(ws, rel)
        if old is not None:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(old, target, follow_symlinks=False)
    commit_baseline(ws)


def unsafe_edits(
    changed: Iterable[str], writable: Sequence[str], *, always: Sequence[str] = (ANSWER_FILE,)
) -> list[str]:
    """Changed paths that no `writable` glob (nor an always-writable file) covers."""
    patterns = [glob_regex(p) for p in writable]
    allowed = set(always)
    return [p for p in changed if p not in allowed and not any(rx.match(p) for rx in patterns)]
