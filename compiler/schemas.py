"""JSON Schemas of every spec kind and of the compiler's artifacts, from the models.

Editors complete YAML from these (`# yaml-language-server: $schema=...`). The
scenario schema spells out each built-in check kind (and a user kind's shape), which
the model keeps as plain maps because a check's fields depend on its `kind`.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from compiler.contract import Job, JobFile, Manifest
from compiler.specs import KINDS
from compiler.specs.checks import BUILTIN, UserCheck

ARTIFACTS: dict[str, type[BaseModel]] = {"manifest": Manifest, "job-file": JobFile, "job": Job}


def _schema(model: type[BaseModel], title: str) -> dict[str, Any]:
    schema = model.model_json_schema(by_alias=True)
    schema["title"] = title
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return schema


def _check_schema(kind: str, model: type[BaseModel]) -> dict[str, Any]:
    sub = model.model_json_schema(by_alias=True)
    sub.pop("$defs", None)
    sub["properties"]["kind"] = {"const": kind, "description": model.__doc__ or kind}
    sub["title"] = f"check: {kind}"
    return sub


def spec_schemas() -> dict[str, dict[str, Any]]:
    """name -> JSON Schema of each spec kind."""
    out: dict[str, dict[str, Any]] = {}
    for kind, model in KINDS.items():
        schema = _schema(model, f"assay {kind} spec")
        schema["properties"]["kind"] = {"const": kind}
        if kind == "scenario":
            builtin = [_check_schema(k, m) for k, m in sorted(BUILTIN.items())]
            user = UserCheck.model_json_schema(by_alias=True)
            user.pop("$defs", None)
            user["additionalProperties"] = True  # a user kind's parameters may be given inline
            user["properties"]["kind"] = {"type": "string", "not": {"enum": sorted(BUILTIN)}}
            user["title"] = "check of a user kind"
            defs = schema.setdefault("$defs", {})
            for m in BUILTIN.values():
                for name, d in (m.model_json_schema(by_alias=True).get("$defs") or {}).items():
                    defs.setdefault(name, d)
            schema["properties"]["checks"] = {
                "anyOf": [{"type": "array", "items": {"anyOf": [*builtin, user]}}, {"type": "null"}],
                "description": schema["properties"]["checks"].get("description", ""),
            }
        out[kind] = schema
    return out


def artifact_schemas() -> dict[str, dict[str, Any]]:
    """name -> JSON Schema of each compiler artifact (manifest, job file, job)."""
    return {name: _schema(model, f"assay {name}") for name, model in ARTIFACTS.items()}


def dumps(schema: dict[str, Any]) -> str:
    """How schema files are written (deterministic)."""
    return json.dumps(schema, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
