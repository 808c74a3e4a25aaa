"""The invalid-spec corpus: each case is a small overlay on one valid base project.

`tests/fixtures/specs/invalid-base/` is a valid project. A case folder under
`tests/fixtures/specs/invalid/<case>/` holds `expected.txt` (the exact error lines), the files that
differ from the base or add to it, and optionally `delete.txt`: base paths (a file or a whole
folder, one per line) the case does not have. `materialise` builds the case's project.
"""

from __future__ import annotations

import shutil
from pathlib import Path

SPECS = Path(__file__).resolve().parents[1] / "fixtures" / "specs"
BASE = SPECS / "invalid-base"
INVALID = SPECS / "invalid"
CASES = sorted(p.name for p in INVALID.iterdir() if p.is_dir())
META = ("expected.txt", "delete.txt")
"""Files of a case folder that describe the case and are not part of its project."""


def overlay_files(case: str) -> list[Path]:
    """The project files a case adds or replaces, relative to its folder."""
    folder = INVALID / case
    return sorted(
        p.relative_to(folder)
        for p in folder.rglob("*")
        if p.is_file() and p.relative_to(folder).as_posix() not in META
    )


def deleted(case: str) -> list[str]:
    """The base paths a case removes (its delete.txt; none without one)."""
    listing = INVALID / case / "delete.txt"
    if not listing.exists():
        return []
    return [line for line in listing.read_text(encoding="utf-8").splitlines() if line.strip()]


def materialise(case: str, dest: Path) -> Path:
    """The case's project at dest: the base, minus delete.txt, plus the case's files."""
    shutil.copytree(BASE, dest)
    for rel in deleted(case):
        target = dest / rel
        if target.is_dir():
            shutil.rmtree(target)
        elif target.is_file():
            target.unlink()
        else:
            raise FileNotFoundError(f"{INVALID / case / 'delete.txt'}: {rel} is not in the base project")
    for rel in overlay_files(case):
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(INVALID / case / rel, dest / rel)
    return dest
