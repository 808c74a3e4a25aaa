"""Golden generated/ output for the small valid project (ASSAY_UPDATE_GOLDEN=1 rewrites it).

The manifest's fingerprint includes a hash of the compiler's own source, so it is
masked; everything else must match byte for byte.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from compiler.pipeline import compile_project

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "specs" / "golden"


def _masked(root: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for p in sorted(root.rglob("*.json")):
        text = p.read_text(encoding="utf-8")
        if p.name == "manifest.json":
            data = json.loads(text)
            data["fingerprint"] = "<masked>"
            text = json.dumps(data, sort_keys=True, indent=1) + "\n"
        out[p.relative_to(root).as_posix()] = text
    return out


def test_generated_matches_golden(valid_project: Path, tmp_path: Path) -> None:
    compile_project(valid_project, generated=tmp_path)
    got = _masked(tmp_path)
    if os.environ.get("ASSAY_UPDATE_GOLDEN"):
        shutil.rmtree(GOLDEN, ignore_errors=True)
        for rel, text in got.items():
            (GOLDEN / rel).parent.mkdir(parents=True, exist_ok=True)
            (GOLDEN / rel).write_text(text, encoding="utf-8")
    assert got == _masked(GOLDEN)
    for rel, text in got.items():
        assert "/work/" not in text and "/tmp/" not in text, f"{rel} holds an absolute path"
