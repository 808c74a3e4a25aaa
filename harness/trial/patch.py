"""diff.patch: everything the agent changed, as one patch that `git apply` accepts on the seed.

A created or deleted file's patch is written directly (`gitdiff`, byte for byte git's); the
paths changed on both sides are hard-linked (copied across file systems) into two scratch
trees `a/` and `b/` under `.assay/patch/`, and ONE `git diff --no-index` over them writes
their patch. Either way every name is quoted the way `git apply` reads it (newlines, escape
sequences, bytes that are not UTF-8) and binary content is carried. No process per file:
60,000 new files cost one read each and one `git apply --check`.

The patch is checked with `git apply --check` against the old versions before it is kept; if
git refuses it, it is built again by git alone, then without the changes of kind (a file
turned folder or symlink), then left empty — never kept broken. Left out, with the reason
(run.json `diff_omitted`): FIFOs, sockets and devices (no content a patch can carry; one that
replaced a file shows as that file's deletion), paths longer than `fdtree.MAX_REL` bytes,
paths git refuses to write (a `.git` folder in the workspace, `git~1`, a `.gitmodules`
symlink), and files over `FILE_MAX` or past the `TOTAL_MAX` a patch carries (the agent sets
its files' sizes: ten sparse 1,000 MB files, no disk to write, had taken capture 270 s and 20 GB
of memory). The preserved workspace holds them all.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

from harness.artifacts.records import Omitted
from harness.artifacts.sandbox_sections import printable
from harness.sandbox import fdtree, neutralise
from harness.trial import gitdiff
from harness.trial.workspace import Change, Roots, Workspace, scan

PATCH_DIR = "patch"
"""Inside `.assay/`: the scratch trees, removed once the patch is written."""
LISTED = 200
"""Omitted paths listed in run.json (the count is always complete)."""
FILE_MAX = 16 << 20
"""The largest file (bytes) whose new content the patch carries."""
TOTAL_MAX = 128 << 20
"""What the patch carries in all (bytes of new content and of names, about), in path order: 30,000
empty files with 4,000-byte names outside `writable` had made a 240 MB patch."""
GIT = ("git", "-c", "core.quotePath=true", "-c", "diff.noprefix=false", "-c", "core.autocrlf=false")
_DIFF = ("diff", "--no-index", "--no-prefix", "--binary", "--no-color", "--no-renames", "--no-ext-diff")
_PLAIN = (None, "file", "symlink")


class Patch(NamedTuple):
    """The patch and what it had to leave out."""

    data: bytes
    omitted: tuple[Omitted, ...]
    """The first `LISTED` paths left out."""
    omitted_count: int


def _env(cwd: Path) -> dict[str, str]:
    return {
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_CEILING_DIRECTORIES": str(cwd.parent),  # never a repository around the run dir
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LC_ALL": "C",
        "HOME": str(cwd),
    }


def refused_by_git(rel: bytes, *, symlink: bool) -> bool:
    """True when `git apply` would refuse to write `rel` (its verify_path, core.protectNTFS on)."""
    low = rel.lower()
    if b"git" not in low and b"gitmod~1" not in low:
        return False
    parts = [part.lower().rstrip(b". ") for part in rel.split(b"/")]
    if any(part in (b".git", b"git~1") for part in parts):
        return True
    return symlink and parts[-1] in (b".gitmodules", b"gitmod~1")


def _classify(change: Change) -> tuple[Change | None, str | None]:
    """What of one change the patch carries, and the note for run.json (None: all of it)."""
    rel = os.fsencode(change.rel)
    if len(rel) > fdtree.MAX_REL:
        return None, f"path longer than {fdtree.MAX_REL} bytes"
    if refused_by_git(rel, symlink="symlink" in (change.old, change.new)):
        return None, "git refuses to write this path"
    if change.old not in _PLAIN:
        return None, f"{change.old} in the baseline: a patch carries no such file"
    if change.new not in _PLAIN:
        why = f"{change.new}: a patch carries no such file"
        if change.old is None:
            return None, why
        return change._replace(new=None), f"{why}; the patch deletes the {change.old} it replaced"
    return change, None


def canonical_header(line: bytes) -> bytes:
    """`diff --git b/x b/x` (a created file) or `a/x a/x` (a deleted one) as `a/x b/x`.

    With --no-prefix over trees named a/ and b/, git names a file present on one side by that
    side's path twice; `git apply` takes either, readers expect the usual form. Both halves are
    the same string (quoted or not), so the line splits at its middle whatever the name holds.
    """
    rest = line[len(b"diff --git ") :]
    half = len(rest) // 2
    if len(rest) % 2 == 0 or rest[half : half + 1] != b" " or rest[:half] != rest[half + 1 :]:
        return line
    name = rest[:half]
    quote = b'"' if name.startswith(b'"') else b""
    bare = name[len(quote) + 2 :]
    return b"diff --git " + quote + b"a/" + bare + b" " + quote + b"b/" + bare


class _Trees:
    """The scratch trees: a/ holds old versions, b/ new ones, of the paths put there."""

    def __init__(self, ws: Workspace) -> None:
        self.dir = ws.meta / PATCH_DIR
        neutralise.remove_tree(self.dir, ignore_errors=True)
        (self.dir / "a").mkdir(parents=True)
        (self.dir / "b").mkdir()
        self.roots = Roots(ws)

    def fill(self, changes: Sequence[Change], *, new_side: Callable[[Change], bool]) -> None:
        """Old versions of every change that had one; new versions where `new_side` says."""
        a_fd = os.open(self.dir / "a", os.O_RDONLY | os.O_DIRECTORY)
        b_fd = os.open(self.dir / "b", os.O_RDONLY | os.O_DIRECTORY)
        made_a: set[bytes] = set()
        made_b: set[bytes] = set()
        try:
            for change in changes:
                rel = os.fsencode(change.rel)
                old = self.roots.old(rel) if change.old else None
                if old is not None:
                    fdtree.put(old[0], rel, a_fd, rel, made=made_a)
                if change.new and new_side(change):
                    fdtree.put(self.roots.ws, rel, b_fd, rel, made=made_b)
        finally:
            os.close(a_fd)
            os.close(b_fd)

    def close(self) -> None:
        self.roots.close()
        neutralise.remove_tree(self.dir, ignore_errors=True)


def _git_diff(scratch: Path) -> bytes:
    done = subprocess.run(
        [*GIT, *_DIFF, "a", "b"], cwd=scratch, env=_env(scratch), capture_output=True, check=False
    )
    if done.returncode not in (0, 1):
        raise RuntimeError(
            f"git diff failed ({done.returncode}): {done.stderr.decode(errors='replace')[-400:]}"
        )
    lines = done.stdout.split(b"\n")
    return b"\n".join(canonical_header(x) if x.startswith(b"diff --git ") else x for x in lines)


def applies(patch: bytes, tree: Path) -> str | None:
    """None when `git apply --check` accepts the patch on `tree`, else git's complaint."""
    if not patch:
        return None
    done = subprocess.run(
        [*GIT, "apply", "--check", "-"],
        cwd=tree,
        env=_env(tree),
        input=patch,
        capture_output=True,
        check=False,
    )
    return None if done.returncode == 0 else done.stderr.decode(errors="replace").strip()[-400:]


def _one_sided(trees: _Trees, change: Change) -> bytes:
    rel = os.fsencode(change.rel)
    if change.new:
        fd, st_mode = trees.roots.ws, change.mode
    else:
        found = trees.roots.old(rel)
        if found is None:
            raise FileNotFoundError(f"the baseline version of {change.rel!r} is gone")
        fd, st_mode = found[0], found[1].st_mode
    symlink = (change.new or change.old) == "symlink"
    data = os.readlink(rel, dir_fd=fd) if symlink else fdtree.read_at(rel, fd)
    mode = gitdiff.file_mode(st_mode, symlink=symlink)
    return gitdiff.one_sided(rel, data, mode, created=change.new is not None)


def _fast(trees: _Trees, kept: Sequence[Change]) -> bytes:
    """Created and deleted files written here, the rest by one git diff over the scratch trees."""
    both = [c for c in kept if c.old and c.new]
    trees.fill(kept, new_side=lambda c: bool(c.old))
    pieces = [(os.fsencode(c.rel).split(b"/"), _one_sided(trees, c)) for c in kept if not (c.old and c.new)]
    data = b"".join(piece for _, piece in sorted(pieces))
    return data + (_git_diff(trees.dir) if both else b"")


def _by_git(trees: _Trees, kept: Sequence[Change]) -> bytes:
    trees.fill(kept, new_side=lambda c: True)
    return _git_diff(trees.dir)


def _plain(kept: Sequence[Change]) -> list[Change]:
    """The changes without a change of kind: no file turned symlink, no file turned folder."""
    names = {c.rel for c in kept}
    above = {c.rel[:i] for c in kept for i, ch in enumerate(c.rel) if ch == "/"}
    return [
        c
        for c in kept
        if c.old in (None, c.new) or c.new is None
        if c.rel not in above and not any(c.rel[:i] in names for i, ch in enumerate(c.rel) if ch == "/")
    ]


def _checked(ws: Workspace, kept: list[Change]) -> tuple[bytes, list[Omitted]]:
    """The first patch `git apply --check` accepts: fast, all by git, by git without kind changes."""
    complaint = None
    attempts: list[tuple[Callable[[_Trees, Sequence[Change]], bytes], Callable[[], list[Change]]]] = [
        (_fast, lambda: kept),
        (_by_git, lambda: kept),
        (_by_git, lambda: _plain(kept)),
    ]
    for build, chosen in attempts:
        subset = chosen()
        if not subset:
            continue
        trees = _Trees(ws)
        try:
            data = build(trees, subset)
            complaint = applies(data, trees.dir / "a")
        except OSError as exc:
            complaint = f"{type(exc).__name__}: {exc}"
        finally:
            trees.close()
        if complaint is None:
            used = {c.rel for c in subset}
            why = "a change of kind git apply refused"
            return data, [Omitted(path=_shown(c), why=why) for c in kept if c.rel not in used]
    why = f"git apply refused the patch: {complaint}"
    return b"", [Omitted(path=_shown(c), why=why) for c in kept]


def _shown(change: Change) -> str:
    return printable(os.fsencode(change.rel))


def _cost(change: Change) -> int:
    """About what a change adds to the patch: its new content, its name four times in the header."""
    return (change.size if change.new == "file" else 0) + 4 * len(os.fsencode(change.rel)) + 100


def diff(
    ws: Workspace,
    changes: Sequence[Change] | None = None,
    *,
    file_max: int = FILE_MAX,
    total_max: int = TOTAL_MAX,
) -> Patch:
    """diff.patch of everything changed since the baseline (or of `changes`, from `scan`); a file
    over `file_max`, and what passes `total_max` in all (names counted), is left out and listed."""
    omitted: list[Omitted] = []
    kept: list[Change] = []
    left = total_max
    for change in scan(ws) if changes is None else changes:
        carried, why = _classify(change)
        if carried and carried.new == "file" and carried.size > file_max:
            carried, why = None, f"larger than {file_max:,} bytes"
        elif carried and _cost(carried) > left:
            carried, why = None, f"past the {total_max:,} bytes a patch carries"
        elif carried:
            left -= _cost(carried)
        if why:
            omitted.append(Omitted(path=_shown(change), why=why))
        if carried:
            kept.append(carried)
    data, refused = _checked(ws, kept) if kept else (b"", [])
    omitted += refused
    return Patch(data, tuple(omitted[:LISTED]), len(omitted))
