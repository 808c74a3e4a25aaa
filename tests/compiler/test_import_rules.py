"""Dependencies flow one way: compiler imports neither harness nor adapters; harness (but the CLI)
and adapters import from compiler only compiler.contract."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _imports(path: Path) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
    return out


def test_compiler_imports_neither_harness_nor_adapters() -> None:
    for path in sorted((ROOT / "compiler").rglob("*.py")):
        bad = {m for m in _imports(path) if m.split(".")[0] in ("harness", "adapters")}
        assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


def test_runtime_imports_only_the_contract() -> None:
    allowed = {"compiler", "compiler.contract"}
    for pkg in ("harness", "adapters"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel == "harness/cli.py" or rel.startswith("harness/commands/"):
                continue  # the CLI is the composition root
            bad = {
                m
                for m in _imports(path)
                if m.split(".")[0] == "compiler"
                and m not in allowed
                and not m.startswith("compiler.contract.")
            }
            assert not bad, f"{rel} imports {sorted(bad)}"
