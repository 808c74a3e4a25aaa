"""generated/schema/ holds the JSON Schemas the models produce (run `assay schema` after a change)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import BaseModel

from compiler import contract
from compiler.schemas import artifact_schemas, dumps, project_kinds, spec_schemas

SCHEMA_DIR = Path(__file__).resolve().parents[2] / "generated" / "schema"


ROOT = SCHEMA_DIR.parents[1]
WANTED = {**spec_schemas(project_kinds(ROOT)), **artifact_schemas()}


@pytest.mark.parametrize("name", sorted(WANTED))
def test_committed_schema_is_current(name: str) -> None:
    wanted = dumps(WANTED[name])
    path = SCHEMA_DIR / f"{name}.json"
    assert path.is_file() and path.read_text(encoding="utf-8") == wanted, (
        f"{path} is stale: run `assay schema`"
    )


def test_scenario_schema_spells_out_check_kinds() -> None:
    defs = WANTED["scenario"]["$defs"]
    kinds = set(defs["check"]["properties"]["kind"]["enum"])
    assert {
        "command",
        "contains",
        "absent",
        "answer",
        "file-exists",
        "unchanged",
        "lint",
        "formatted",
    } <= kinds
    command = defs["check-command"]
    assert "run" in command["required"] and command["additionalProperties"] is False
    # The example's own `pytest` kind wins over the built-in one, as in the compiler.
    assert defs["check-pytest"]["title"] == "check: pytest (specs/checks)"
    assert set(defs["check-lint"]["properties"]["with"]["properties"]) == {"code", "max", "path"}
    # Without a project's kinds, any other kind is a user kind with free parameters.
    generic = spec_schemas()["scenario"]["$defs"]
    assert "check-user" in generic and "enum" not in generic["check"]["properties"]["kind"]


def test_every_contract_field_is_documented() -> None:
    for value in vars(contract).values():
        if (
            isinstance(value, type)
            and issubclass(value, BaseModel)
            and value.__module__.startswith(contract.__name__ + ".")
        ):
            for name, info in value.model_fields.items():
                assert info.description, f"{value.__name__}.{name} has no description"
    manifest = json.loads((SCHEMA_DIR / "manifest.json").read_text())
    assert manifest["title"] == "assay manifest"
