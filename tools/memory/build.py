"""Build one version of the memo CLI into a folder (the example of a version comparison).

    python tools/memory/build.py --version 2.0 --out build/memo-2.0
    python tools/memory/build.py --version 2.1 --out build/memo-2.1
    python tools/memory/build.py --version 2.1 --out dist --wheel   # a pip-installable wheel

2.0 is tools/memory/memo as it stands. 2.1 is its "ranked search" rewrite as first shipped:
`search` looks only in a note's text, case-sensitively -- so `memo search samesite` no longer
finds a note that says "SameSite". specs/matrices/demo-versions.yaml compares the two.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import shutil
import zipfile
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


def wheel(version: str, out: Path) -> Path:
    """Write a wheel of memo `version` into `out` (a `memo` console script; for `package:` versions)."""
    scratch = build(version, out / f".memo-{version}")
    source = scratch.read_text(encoding="utf-8")
    shutil.rmtree(scratch.parent)
    module = source.replace(
        'if __name__ == "__main__":',
        'def cli() -> None:\n    sys.exit(main(sys.argv[1:]))\n\n\nif __name__ == "__main__":',
    )
    dist = f"memo_tool-{version}.dist-info"
    files = {
        "memo_tool.py": module,
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: memo-tool\nVersion: {version}\n",
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: assay-example\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{dist}/entry_points.txt": "[console_scripts]\nmemo = memo_tool:cli\n",
    }
    record = []
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(text.encode())}")
    files[f"{dist}/RECORD"] = "\n".join([*record, f"{dist}/RECORD,,"]) + "\n"
    target = out / f"memo_tool-{version}-py3-none-any.whl"
    with zipfile.ZipFile(target, "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)
    return target


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", required=True)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument(
        "--wheel", action="store_true", help="write a pip-installable wheel into --out instead"
    )
    args = parser.parse_args()
    print(wheel(args.version, args.out) if args.wheel else build(args.version, args.out))
