"""generated/schema/ holds the JSON Schemas the models produce (run `assay schema` after a change)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import BaseModel

from compiler import contract
from compiler.schemas import artifact_schemas, dumps, spec_schemas

SCHEMA_DIR = Path(__file__).resolve().parents[2] / "generated" / "schema"


@pytest.mark.parametrize("name", sorted({**spec_schemas(), **artifact_schemas()}))
def test_committed_schema_is_current(name: str) -> None:
    wanted = dumps({**spec_schemas(), **artifact_schemas()}[name])
    path = SCHEMA_DIR / f"{name}.json"
    assert path.is_file() and path.read_text(encoding="utf-8") == wanted, (
        f"{path} is stale: run `assay schema`"
    )


def test_scenario_schema_spells_out_check_kinds() -> None:
    checks = spec_schemas()["scenario"]["properties"]["checks"]["anyOf"][0]["items"]["anyOf"]
    kinds = {c["properties"]["kind"].get("const") for c in checks}
    assert {"command", "contains", "absent", "answer", "file-exists", "unchanged"} <= kinds
    command = next(c for c in checks if c["properties"]["kind"].get("const") == "command")
    assert "run" in command["required"] and command["additionalProperties"] is False


def test_every_contract_field_is_documented() -> None:
    for value in vars(contract).values():
        if isinstance(value, type) and issubclass(value, BaseModel) and value.__module__ == contract.__name__:
            for name, info in value.model_fields.items():
                assert info.description, f"{value.__name__}.{name} has no description"
    manifest = json.loads((SCHEMA_DIR / "manifest.json").read_text())
    assert manifest["title"] == "assay manifest"
