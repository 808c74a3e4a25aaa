"""Inside harness/, dependencies follow the data flow: lower layers never import higher ones.

artifacts (the run-directory format) is the bottom; sandbox runs untrusted commands; trial runs
one trial with them; checks and grade judge a run; batch runs many trials; report reads grades;
importers (`assay import`) read other formats and run a solution in the sandbox; the CLI (cli,
commands) composes everything. docs/architecture.md draws the same map. Every
import counts: at module level, inside a function, or under TYPE_CHECKING.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

FORBIDDEN: dict[str, frozenset[str]] = {
    "artifacts": frozenset(
        {
            "sandbox",
            "gateway",
            "trial",
            "checks",
            "grade",
            "batch",
            "report",
            "validity",
            "commands",
            "cli",
            "importers",
        }
    ),
    "sandbox": frozenset(
        {"gateway", "trial", "checks", "grade", "batch", "report", "validity", "commands", "cli", "importers"}
    ),
    "gateway": frozenset(
        {"trial", "checks", "grade", "batch", "report", "validity", "commands", "cli", "importers"}
    ),
    "trial": frozenset({"checks", "grade", "batch", "report", "validity", "commands", "cli", "importers"}),
    "checks": frozenset({"trial", "grade", "batch", "report", "validity", "commands", "cli", "importers"}),
    "grade": frozenset({"trial", "batch", "report", "validity", "commands", "cli", "importers"}),
    "batch": frozenset({"report", "validity", "commands", "cli", "importers"}),
    "report": frozenset(
        {"sandbox", "gateway", "trial", "checks", "batch", "validity", "commands", "cli", "importers"}
    ),
    "validity": frozenset({"trial", "grade", "batch", "report", "commands", "cli", "importers"}),
    "importers": frozenset({"gateway", "checks", "grade", "batch", "report", "validity", "commands", "cli"}),
}
"""harness package (or top module) -> harness packages it must not import."""


def _part(module: str) -> str | None:
    """The harness package a dotted module belongs to (`harness.trial.session` -> `trial`)."""
    parts = module.split(".")
    return parts[1] if parts[0] == "harness" and len(parts) > 1 else None


def imported(path: Path) -> Iterator[tuple[str, int]]:
    """(module, line) of every absolute import of a file, `from harness import x` as `harness.x`."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from ((a.name, node.lineno) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "harness":
                yield from ((f"harness.{a.name}", node.lineno) for a in node.names)
            else:
                yield node.module, node.lineno


def edges(root: Path) -> set[tuple[str, str]]:
    """(importer, imported) pairs of harness packages under root/harness."""
    found: set[tuple[str, str]] = set()
    for path in (root / "harness").rglob("*.py"):
        src = _part(".".join(path.relative_to(root).with_suffix("").parts))
        for module, _ in imported(path):
            dst = _part(module)
            if src and dst and src != dst:
                found.add((src, dst))
    return found


def violations(root: Path) -> list[str]:
    """`file:line: a imports b` for every import that goes against FORBIDDEN."""
    out: list[str] = []
    for path in sorted((root / "harness").rglob("*.py")):
        rel = path.relative_to(root)
        src = _part(".".join(rel.with_suffix("").parts))
        for module, line in sorted(imported(path), key=lambda item: item[1]):
            dst = _part(module)
            if src in FORBIDDEN and dst in FORBIDDEN[src]:
                out.append(f"{rel.as_posix()}:{line}: {src} imports {module}")
    return out


def test_harness_layers_import_downwards_only() -> None:
    assert violations(ROOT) == []


def test_the_walker_sees_the_real_edges() -> None:
    found = edges(ROOT)
    for edge in [("trial", "sandbox"), ("trial", "artifacts"), ("grade", "checks"), ("batch", "trial")]:
        assert edge in found, f"expected {edge[0]} to import {edge[1]}: the walker lost track of imports"


def test_a_violation_is_reported(tmp_path: Path) -> None:
    pkg = tmp_path / "harness" / "sandbox"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "bad.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "from harness import trial\n"
        "if TYPE_CHECKING:\n"
        "    from harness.grade.core import grade_run\n"
        "def f() -> None:\n"
        "    import harness.report.summary\n"
        "from harness.artifacts import names\n"
    )
    assert violations(tmp_path) == [
        "harness/sandbox/bad.py:2: sandbox imports harness.trial",
        "harness/sandbox/bad.py:4: sandbox imports harness.grade.core",
        "harness/sandbox/bad.py:6: sandbox imports harness.report.summary",
    ]
