"""The oracle agent: applies the scenario's reference overlay to the workspace.

The runner copies the reference into the run directory and names it in BENCH_AGENT_ARGS
(`reference_dir`), because the agent's sandbox cannot see the scenario folder. A file
`.deleted` in the overlay lists workspace paths to remove, one per line. A writable mount's
reference overlay (`mount_reference_dirs`: mount path -> copy) is applied at the mount's path.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

DELETED = ".deleted"


def apply_overlay(overlay: Path, workspace: Path) -> list[str]:
    """Copy every file of the overlay over the workspace; return the paths written or removed."""
    touched: list[str] = []
    for src in sorted(overlay.rglob("*")):
        rel = src.relative_to(overlay)
        if src.is_dir() or rel.as_posix() == DELETED:
            continue
        dest = workspace / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest)
        touched.append(rel.as_posix())
    listing = overlay / DELETED
    if listing.is_file():
        for line in listing.read_text(encoding="utf-8").splitlines():
            if line.strip():
                (workspace / line.strip()).unlink(missing_ok=True)
                touched.append(line.strip())
    return touched


def main() -> int:
    """Apply the reference and report it in the transcript."""
    sys.stdin.read()
    args = json.loads(os.environ.get("BENCH_AGENT_ARGS", "{}"))
    ref = args.get("reference_dir")
    if not ref or not Path(ref).is_dir():
        print("oracle: no reference_dir in BENCH_AGENT_ARGS", file=sys.stderr)
        return 2
    touched = apply_overlay(Path(ref), Path.cwd())
    for where, overlay in sorted((args.get("mount_reference_dirs") or {}).items()):
        touched += [f"{where}/{rel}" for rel in apply_overlay(Path(overlay), Path(where))]
    transcript = os.environ.get("BENCH_TRANSCRIPT")
    if transcript:
        with open(transcript, "a", encoding="utf-8") as fh:
            for path in touched:
                fh.write(json.dumps({"type": "edit", "path": path}) + "\n")
    print(f"oracle: applied {len(touched)} file(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
