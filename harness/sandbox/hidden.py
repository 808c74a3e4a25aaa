"""Laying a scenario's hidden files (its `grader/` folder) over a workspace the agent wrote.

The grader does it on its copy after the agent has finished, and `assay validate` on the
workspaces it builds, alike: nothing is written through what the agent left in the way, and
a folder only the hidden files have is the grader's alone.
"""

from __future__ import annotations

import shutil
from pathlib import Path, PurePosixPath

from harness.sandbox.pathsafe import clear_way


def overlay(src: Path, dst: Path, seed: Path | None = None) -> None:
    """Copy src's files over dst, replacing whatever the agent left in their way.

    A file, folder or symlink the agent put where a hidden file goes is removed first, so
    the overlay never writes through an agent's symlink to somewhere outside the copy. A folder
    of the hidden files that the seed does not have is the grader's alone: whatever the agent put
    there (a conftest.py beside the hidden tests, which pytest would load) is removed first too.
    """
    if seed is not None:
        for folder in _grader_only(src, seed):
            clear_way(dst, folder)
    for path in sorted(src.rglob("*")):
        if not path.is_file():
            continue
        shutil.copy2(path, clear_way(dst, path.relative_to(src).as_posix()))


def _grader_only(src: Path, seed: Path) -> list[str]:
    """The outermost folders under src (relative paths) that the seed has no folder for."""
    found: list[str] = []
    pending = [PurePosixPath()]
    while pending:
        rel = pending.pop()
        for entry in sorted((src / rel).iterdir()):
            if not entry.is_dir() or entry.is_symlink():
                continue
            sub = rel / entry.name
            if (seed / sub).is_dir() and not (seed / sub).is_symlink():
                pending.append(sub)
            else:
                found.append(sub.as_posix())
    return sorted(found)
