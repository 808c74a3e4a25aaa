"""Build one version of the memo CLI into a folder (the example of a version comparison).

    python tools/memory/build.py --version 2.0 --out build/memo-2.0
    python tools/memory/build.py --version 2.1 --out build/memo-2.1

2.0 is tools/memory/memo as it stands. 2.1 is its "ranked search" rewrite as first shipped:
`search` looks only in a note's text, case-sensitively -- so `memo search samesite` no longer
finds a note that says "SameSite". specs/matrices/demo-versions.yaml compares the two.
"""

from __future__ import annotations

import argparse
from pathlib import Path

SOURCE = Path(__file__).resolve().parent / "memo"
BUILDS = {
    "2.0": {},
    "2.1": {"SEARCH_FIELDS": '("text",)', "CASE_SENSITIVE": "True"},
}


def build(version: str, out: Path) -> Path:
    """Write `out/memo` for `version`; returns its path."""
    if version not in BUILDS:
        raise SystemExit(f"unknown memo version {version!r}; known: {', '.join(BUILDS)}")
    lines = []
    for line in SOURCE.read_text(encoding="utf-8").splitlines():
        name = line.split(" = ", 1)[0]
        if name == "VERSION":
            line = f'VERSION = "{version}"'
        elif name in BUILDS[version]:
            line = f"{name} = {BUILDS[version][name]}"
        lines.append(line)
    out.mkdir(parents=True, exist_ok=True)
    target = out / "memo"
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")
    target.chmod(0o755)
    return target


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", required=True)
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args()
    print(build(args.version, args.out))
