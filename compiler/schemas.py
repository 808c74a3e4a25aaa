"""JSON Schemas of every spec kind and of the compiler's artifacts, from the models.

Editors complete YAML from these (`# yaml-language-server: $schema=...`), so a spec
schema accepts and refuses what the compiler does: `x-*` keys wherever the compiler
drops them as extensions (any map of a model's fields), the models' numeric minimums,
and every built-in check kind spelled out. The scenario model keeps checks as plain
maps because a check's fields depend on its `kind`; here `kind` selects the check's
schema (`if`/`then`, a discriminated union), so an error lands on the one check item
and its key, not on the whole `checks` list.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from compiler.checks import user_model
from compiler.contract import ISOLATIONS, Job, JobFile, Manifest
from compiler.ids import DOTTED
from compiler.specs import KINDS, CheckKindDoc
from compiler.specs.checks import BUILTIN, UserCheck
from compiler.specs.grading import PREDICATES

ARTIFACTS: dict[str, type[BaseModel]] = {"manifest": Manifest, "job-file": JobFile, "job": Job}


def model_schema(model: type[BaseModel], title: str, *, by_alias: bool = True) -> dict[str, Any]:
    """A model's JSON Schema (draft 2020-12) under `title`."""
    schema = model.model_json_schema(by_alias=by_alias)
    schema["title"] = title
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return schema


EXTENSIONS: dict[str, Any] = {"^x-": {}}
"""`x-*` keys: free-form wherever a map's keys are a model's fields (compiler.rawcheck.drop_extensions)."""


def _check_schema(kind: str, model: type[BaseModel]) -> dict[str, Any]:
    sub = model.model_json_schema(by_alias=True)
    sub.pop("$defs", None)
    sub["properties"]["kind"] = {"const": kind, "description": model.__doc__ or kind}
    sub["title"] = f"check: {kind}"
    return sub


def _user_check(kind: CheckKindDoc) -> dict[str, Any]:
    """A check of a project's own kind: its parameters inline or under `with:`, required ones given."""
    sub = _check_schema(kind.id, user_model(kind))
    sub["title"] = f"check: {kind.id} (specs/checks)"
    params = {n: p for n, p in sub["properties"].items() if n in kind.params}
    sub["properties"]["with"] = {
        "type": "object",
        "properties": params,
        "additionalProperties": False,
        "description": "Parameters of the kind (or give them inline).",
    }
    required = [n for n, p in sorted(kind.params.items()) if p.required]
    if required:
        sub["allOf"] = [
            {"anyOf": [{"required": [n]}, {"required": ["with"], "properties": {"with": {"required": [n]}}}]}
            for n in required
        ]
    return sub


def _checks(defs: dict[str, Any], kinds: Mapping[str, CheckKindDoc] | None) -> dict[str, Any]:
    """The schema of one check: its `kind` picks its kind's schema (a discriminated union).

    With the project's own kinds known, each is spelled out (and wins over a built-in kind of
    the same name, as in the compiler) and any other kind is refused; without them, a kind
    that is not built in may have any parameters.
    """
    own = dict(kinds or {})
    schemas = {k: _check_schema(k, m) for k, m in BUILTIN.items() if k not in own}
    schemas.update({k: _user_check(kind) for k, kind in own.items()})
    for model in BUILTIN.values():
        for sub, d in (model.model_json_schema(by_alias=True).get("$defs") or {}).items():
            defs.setdefault(sub, d)
    branches: list[dict[str, Any]] = []
    for kind in sorted(schemas):
        defs[f"check-{kind}"] = schemas[kind]
        branches.append(
            {
                "if": {"properties": {"kind": {"const": kind}}, "required": ["kind"]},
                "then": {"$ref": f"#/$defs/check-{kind}"},
            }
        )
    kind_rule: dict[str, Any] = {"type": "string", "description": "A built-in kind or a check-kind id."}
    if kinds is None:
        user = UserCheck.model_json_schema(by_alias=True)
        user.pop("$defs", None)
        user["additionalProperties"] = True  # a user kind's parameters may be given inline
        user["title"] = "check of a user kind"
        defs["check-user"] = user
        branches.append(
            {
                "if": {"properties": {"kind": {"enum": sorted(schemas)}}, "required": ["kind"]},
                "else": {"$ref": "#/$defs/check-user"},
            }
        )
    else:
        kind_rule["enum"] = sorted(schemas)
    return {
        "type": "object",
        "required": ["id", "kind"],
        "properties": {"kind": kind_rule},
        "allOf": branches,
    }


def project_kinds(root: Path) -> dict[str, CheckKindDoc]:
    """The valid `kind: check-kind` specs of the project at root (the others are the compiler's to report)."""
    from compiler.errors import Collector
    from compiler.load import parse_sources, scan
    from compiler.rawcheck import model_of

    found: dict[str, CheckKindDoc] = {}
    for doc in parse_sources(scan(root)).docs:
        if isinstance(doc.data, dict) and doc.data.get("kind") == "check-kind":
            kind = model_of(Collector(), doc, CheckKindDoc)
            if kind is not None:
                found.setdefault(kind.id, kind)
    return found


def _one_predicate(schema: dict[str, Any], *, unless: tuple[str, ...] = ()) -> None:
    """Exactly one predicate key (the compiler's E243); `unless` keys make it optional (a `ref:`)."""
    one = {"oneOf": [{"required": [p]} for p in PREDICATES]}
    if unless:
        schema["if"] = {"not": {"anyOf": [{"required": [k]} for k in unless]}}
        schema["then"] = one
    else:
        schema.update(one)


MATRIX_ENTRY: dict[str, Any] = {
    "type": "object",
    "additionalProperties": {"type": "string"},
    "patternProperties": EXTENSIONS,
}
"""An include/exclude entry: one level, agent or scenario per key (compiler.rules), `x-*` keys free."""


PARAM_TYPES = {
    "string": "string",
    "integer": "integer",
    "number": "number",
    "boolean": "boolean",
    "list": "array",
    "dict": "object",
}
"""A user kind's parameter types (`any` aside) as JSON Schema types."""


def _branch(prop: dict[str, Any], json_type: str) -> dict[str, Any]:
    """The alternative of an optional field's schema that has the JSON type (the field itself if plain)."""
    return next((b for b in prop.get("anyOf", []) if b.get("type") == json_type), prop)


def _rules(kind: str, schema: dict[str, Any]) -> None:
    """Rules of one document the compiler checks beside the model's shape."""
    defs = schema.get("$defs", {})
    if kind == "expectation":
        _one_predicate(schema)
    if "PredicateDoc" in defs:
        _one_predicate(defs["PredicateDoc"])
    if "ExpectationEntry" in defs:
        _one_predicate(defs["ExpectationEntry"], unless=("ref", "name"))
    # Without `extends:` nothing else can give an agent its adapter, a matrix its agents, a
    # scenario its checks; an empty list is as wrong as none (E102, E250, E241).
    needs = {"agent": "adapter", "matrix": "agents", "scenario": "checks"}
    rules: list[dict[str, Any]] = []
    if kind in needs:
        rules.append({"if": {"not": {"required": ["extends"]}}, "then": {"required": [needs[kind]]}})
    if kind == "agent":  # a scripted agent without a script would do nothing (compiler.agentargs)
        rules.append(
            {
                "if": {
                    "properties": {"adapter": {"const": "scripted"}},
                    "required": ["adapter"],
                    "not": {"required": ["extends"]},
                },
                "then": {
                    "required": ["args"],
                    "properties": {
                        "args": {"anyOf": [{"required": ["script"]}, {"required": ["scenario_script"]}]}
                    },
                },
            }
        )
    if rules:
        schema["allOf"] = rules
    for name in ("agents", "checks"):
        if kind in ("matrix", "scenario") and name in schema["properties"]:
            schema["properties"][name]["minItems"] = 1
    if "NegativeDoc" in defs:
        defs["NegativeDoc"]["properties"]["fails"]["minItems"] = 1
    _values(kind, schema, defs)


def _values(kind: str, schema: dict[str, Any], defs: dict[str, Any]) -> None:
    """Values the compiler refuses beside the model's types: a matrix entry's lists, an unknown
    isolation, a parameter's default of another type."""
    if kind == "matrix":
        for name in ("include", "exclude"):
            _branch(schema["properties"][name], "array")["items"] = MATRIX_ENTRY
    if "OptionsDoc" in defs:  # a known isolation or a plug-in's dotted path (compiler.validate)
        isolation = defs["OptionsDoc"]["properties"]["isolation"]
        isolation.pop("type", None)
        isolation["anyOf"] = [
            {"enum": list(ISOLATIONS)},
            {"type": "string", "pattern": DOTTED},
            {"type": "null"},
        ]
    if "ParamDoc" in defs:  # a default is of its parameter's type (compiler.rules.check_kind)
        defs["ParamDoc"]["allOf"] = [
            {
                "if": {"properties": {"type": {"const": name}}, "required": ["type"]},
                "then": {"properties": {"default": {"type": [json_type, "null"]}}},
            }
            for name, json_type in PARAM_TYPES.items()
        ]


def _nullable(node: Any) -> Any:
    """`anyOf: [X, {type: null}]` as `X` with `type: [t, null]` where X has a plain type, so a
    validator reports an error inside X at its own key rather than "not valid under anyOf"."""
    if isinstance(node, list):
        return [_nullable(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _nullable(v) for k, v in node.items()}
    options = out.get("anyOf")
    if isinstance(options, list) and len(options) == 2 and {"type": "null"} in options:
        other = next(o for o in options if o != {"type": "null"})
        if isinstance(other.get("type"), str) and not set(other) & set(out) - {"anyOf"}:
            del out["anyOf"]
            out.update(other)
            out["type"] = [other["type"], "null"]
    return out


def _extensions(node: Any) -> Any:
    """Allow `x-*` keys in every closed object (a model's field map)."""
    if isinstance(node, list):
        return [_extensions(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _extensions(v) for k, v in node.items()}
    if out.get("additionalProperties") is False and "properties" in out:
        out["patternProperties"] = EXTENSIONS
    return out


def spec_schemas(kinds: Mapping[str, CheckKindDoc] | None = None) -> dict[str, dict[str, Any]]:
    """name -> JSON Schema of each spec kind; `kinds`: the project's own check kinds (`project_kinds`)."""
    out: dict[str, dict[str, Any]] = {}
    for kind, model in KINDS.items():
        schema = model_schema(model, f"assay {kind} spec")
        schema["properties"]["kind"] = {"const": kind}
        if kind == "scenario":
            defs = schema.setdefault("$defs", {})
            defs["check"] = _checks(defs, kinds)
            schema["properties"]["checks"] = {
                "type": ["array", "null"],
                "items": {"$ref": "#/$defs/check"},
                "description": schema["properties"]["checks"].get("description", ""),
            }
        _rules(kind, schema)
        out[kind] = _extensions(_nullable(schema))
    return out


def artifact_schemas() -> dict[str, dict[str, Any]]:
    """name -> JSON Schema of each compiler artifact (manifest, job file, job)."""
    return {name: model_schema(model, f"assay {name}") for name, model in ARTIFACTS.items()}


def dumps(schema: dict[str, Any]) -> str:
    """How schema files are written (deterministic)."""
    return json.dumps(schema, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
