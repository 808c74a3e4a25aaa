"""The editor schemas agree with the compiler: every example spec passes them, and every error of
the invalid-spec corpus that a JSON Schema can express makes its file fail them.

What a schema cannot express is named, not skipped silently: errors across files (an unknown
reference, a cycle), YAML itself (duplicate or non-string keys, tags), positions in other files
(templates, prompts), a user check kind's own parameters, and documents merged through `extends:`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from compiler.schemas import project_kinds, spec_schemas
from compiler.yamlio import parse
from tests.compiler.corpus import CASES, INVALID, materialise

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = spec_schemas()
VALIDATORS = {kind: jsonschema.Draft202012Validator(schema) for kind, schema in SCHEMAS.items()}
"""The schemas without a project's check kinds (any other kind is a user kind)."""


def validators(root: Path) -> dict[str, jsonschema.Draft202012Validator]:
    """The schemas `assay schema` writes for the project at root (its own check kinds spelled out)."""
    return {k: jsonschema.Draft202012Validator(v) for k, v in spec_schemas(project_kinds(root)).items()}


EXAMPLE_DIRS = [
    ROOT,
    ROOT / "tests" / "fixtures" / "specs" / "valid",
    ROOT / "tests" / "fixtures" / "specs" / "invalid-base",
    ROOT / "tests" / "fixtures" / "seed000",
    ROOT / "tests" / "fixtures" / "runner" / "project",
]
EXPRESSIBLE = ("E101", "E102", "E103", "E104", "E241", "E243", "E250")
"""Codes of one document's own shape: a schema can say each of them."""
LINE = re.compile(r"^(?P<file>[^:\s]+):\d+:\d+: error\[(?P<code>E\d{3})\]: (?P<path>[^:]+?): (?P<msg>.+)$")
BEYOND = {
    "a non-runnable agent needs": "a rule between two fields' values",
    "overriding": "an override merges a library spec from another file",
    "unknown kind": "no schema to pick for an unknown kind",
    "needs `command:`": "a rule between two fields' values",
}


def _specs(root: Path) -> list[Path]:
    found = sorted((root / "specs").rglob("*.y*ml")) if (root / "specs").is_dir() else []
    return found + sorted((root / "scenarios").glob("*/scenario.y*ml"))


def _data(path: Path, rel: str) -> dict[str, Any] | None:
    doc, errors = parse(rel, path.read_text(encoding="utf-8"))
    return doc.data if isinstance(doc.data, dict) and not errors else None


EXAMPLES = [(root, p) for root in EXAMPLE_DIRS for p in _specs(root)]


@pytest.mark.parametrize(("root", "path"), EXAMPLES, ids=lambda x: str(x).replace(str(ROOT) + "/", ""))
def test_every_example_spec_passes_its_schema(root: Path, path: Path) -> None:
    data = _data(path, path.relative_to(root).as_posix())
    assert data is not None and data.get("kind") in VALIDATORS, path
    errors = [
        f"{list(e.absolute_path)}: {e.message}" for e in validators(root)[data["kind"]].iter_errors(data)
    ]
    assert not errors, errors


def test_there_are_examples_of_every_kind() -> None:
    kinds = {(_data(p, p.name) or {}).get("kind") for _, p in EXAMPLES}
    assert set(SCHEMAS) <= kinds


def _expressible(folder: Path, line: str) -> tuple[str, str] | None:
    m = LINE.match(line)
    if m is None or m["code"] not in EXPRESSIBLE or any(k in m["msg"] for k in BEYOND):
        return None
    data = _data(folder / m["file"], m["file"])
    kind = data.get("kind") if data is not None else None
    if data is None or not isinstance(kind, str) or kind not in VALIDATORS or "extends" in data:
        return None  # no schema to pick for a kind that is unknown, or no kind at all
    return m["file"], m["path"]


CASE_LINES = [
    (case, line)
    for case in CASES
    for line in (INVALID / case / "expected.txt").read_text(encoding="utf-8").splitlines()
    if not line.startswith("  hint: ")
]


@pytest.mark.parametrize(("case", "line"), CASE_LINES)
def test_invalid_spec_fails_its_schema_where_a_schema_can_say_so(
    case: str, line: str, tmp_path: Path
) -> None:
    folder = materialise(case, tmp_path / case)
    where = _expressible(folder, line)
    if where is None:
        return  # across files, YAML itself, or another file's template: named in the module docstring
    rel, key_path = where
    data = _data(folder / rel, rel)
    assert data is not None
    errors = list(validators(folder)[data["kind"]].iter_errors(data))
    assert errors, f"{rel} passes its schema but the compiler says: {line}"
    if key_path.startswith("checks["):  # a discriminated union: an error is on that one check
        index = int(key_path.split("[")[1].split("]")[0])
        paths = [list(e.absolute_path) for e in errors]
        assert any(p[:2] == ["checks", index] for p in paths), paths


def test_schemas_allow_extensions_where_the_compiler_does() -> None:
    scenario = {
        "kind": "scenario",
        "id": "s",
        "x-owner": "team-a",
        "checks": [{"id": "c", "kind": "command", "run": "true", "x-note": "why"}],
        "negatives": {"x-keeps-newline": {"fails": ["c"], "x-why": "a name here"}},
    }
    assert not list(VALIDATORS["scenario"].iter_errors(scenario))
    assert list(VALIDATORS["scenario"].iter_errors({**scenario, "y-owner": "team-a"}))


@pytest.mark.parametrize(
    ("kind", "data", "path"),
    [
        ("matrix", {"kind": "matrix", "id": "m", "agents": ["a"], "trials": -5}, ["trials"]),
        ("matrix", {"kind": "matrix", "id": "m", "agents": ["a"], "parallel": 0}, ["parallel"]),
        ("matrix", {"kind": "matrix", "id": "m", "agents": ["a"], "max_jobs": -1}, ["max_jobs"]),
        (
            "expectation",
            {"kind": "expectation", "id": "e", "all": [{"trace": {"comand": "ruff"}}]},
            ["all", 0, "trace"],
        ),
        (
            "scenario",
            {
                "kind": "scenario",
                "id": "s",
                "checks": [
                    {"id": "a", "kind": "file-exists", "path": "x"},
                    {"id": "b", "kind": "command", "rn": "x"},
                ],
            },
            ["checks", 1],
        ),
    ],
)
def test_schema_errors_land_on_the_field(kind: str, data: dict[str, Any], path: list[Any]) -> None:
    errors = list(VALIDATORS[kind].iter_errors(data))
    assert errors
    best = jsonschema.exceptions.best_match(errors)
    assert list(best.absolute_path)[: len(path)] == path, (best.message, list(best.absolute_path))
