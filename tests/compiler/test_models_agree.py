"""cerberus (raw documents) and pydantic (everything after) accept and refuse the same documents."""

from __future__ import annotations

import typing
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from compiler.rawcheck import cerberus_schema, check
from compiler.specs import KINDS
from compiler.specs.checks import BUILTIN
from compiler.specs.script import ScriptDoc
from compiler.yamlio import parse

MODELS: list[type[BaseModel]] = [*KINDS.values(), *dict.fromkeys(BUILTIN.values()), ScriptDoc]


def _models_in(model: type[BaseModel], seen: set[type[BaseModel]]) -> None:
    if model in seen:
        return
    seen.add(model)
    for info in model.model_fields.values():
        stack = [info.annotation]
        while stack:
            tp = stack.pop()
            if isinstance(tp, type) and issubclass(tp, BaseModel):
                _models_in(tp, seen)
            stack.extend(typing.get_args(tp))


ALL: list[type[BaseModel]] = []
for _m in MODELS:
    _found: set[type[BaseModel]] = set()
    _models_in(_m, _found)
    # sorted: a set's order changes from process to process (pytest -n collects in each worker)
    ALL.extend(sorted((x for x in _found if x not in ALL), key=lambda m: m.__qualname__))


@pytest.mark.parametrize("model", ALL, ids=lambda m: m.__name__)
def test_same_keys_and_required(model: type[BaseModel]) -> None:
    schema = cerberus_schema(model)
    fields = {(info.alias or name): info for name, info in model.model_fields.items()}
    assert set(schema) == set(fields)
    for key, info in fields.items():
        assert schema[key]["required"] == info.is_required(), key
        assert info.description, f"{model.__name__}.{key} has no description"


SAMPLES: list[tuple[str, dict[str, Any]]] = [
    ("agent", {"kind": "agent", "id": "a", "adapter": "x"}),
    ("agent", {"kind": "agent", "id": "a", "adapter": 3}),
    ("agent", {"kind": "agent", "id": "a", "runnable": "no"}),
    ("agent", {"kind": "agent", "id": "a", "args": {"k": [1, {"z": None}]}, "requires": ["git"]}),
    ("agent", {"kind": "agent", "id": "a", "requires": "git"}),
    ("agent", {"kind": "agnt", "id": "a"}),
    ("agent", {"kind": "agent", "id": "a", "extra": 1}),
    ("matrix", {"kind": "matrix", "id": "m", "scenarios": "all", "trials": 2}),
    ("matrix", {"kind": "matrix", "id": "m", "scenarios": "some"}),
    ("matrix", {"kind": "matrix", "id": "m", "scenarios": {"split": "test", "family": ["a"]}}),
    ("matrix", {"kind": "matrix", "id": "m", "scenarios": {"split": "dev"}}),
    ("matrix", {"kind": "matrix", "id": "m", "limits": {"timeout_s": 5}, "options": {"env_pass": ["A"]}}),
    ("matrix", {"kind": "matrix", "id": "m", "limits": {"timeout_s": "5"}}),
    ("matrix", {"kind": "matrix", "id": "m", "trials": True}),
    (
        "project",
        {
            "kind": "project",
            "spec_version": 1,
            "name": "p",
            "factors": {"t": {"none": None, "b": {"network": True}}},
            "control": "none",
        },
    ),
    (
        "project",
        {
            "kind": "project",
            "spec_version": 1,
            "name": "p",
            "factors": {"t": {"b": {"network": "off"}}},
            "control": "b",
        },
    ),
    ("project", {"kind": "project", "spec_version": 1, "name": "p", "control": "b"}),
    ("scenario", {"kind": "scenario", "id": "s", "entry": ["a", "b"], "checks": [{"id": "c"}]}),
    ("scenario", {"kind": "scenario", "id": "s", "entry": 3}),
    ("scenario", {"kind": "scenario", "id": "s", "negatives": {"n": {"fails": "c"}}}),
    ("check-kind", {"kind": "check-kind", "id": "k", "run": "x", "params": {"a": {"type": "string"}}}),
    ("check-kind", {"kind": "check-kind", "id": "k", "run": "x", "params": {"a": {"type": "str"}}}),
    ("check-kind", {"kind": "check-kind", "id": "k", "run": "x", "result": {"count": {"max": 1.5}}}),
    ("matrix", {"kind": "matrix", "id": "m", "trials": 0}),
    ("matrix", {"kind": "matrix", "id": "m", "limits": {"timeout_s": 0}}),
    (
        "expectation",
        {
            "kind": "expectation",
            "id": "e",
            "all": [{"trace": {"min": 1}}, {"not": {"friction": {"help_lookups": {"max": 2}}}}],
        },
    ),
    ("expectation", {"kind": "expectation", "id": "e", "all": [{"not": {"trace": {"min": "lots"}}}]}),
    ("expectation", {"kind": "expectation", "id": "e", "friction": {"help_lookup": 1}}),
    (
        "scenario",
        {"kind": "scenario", "id": "s", "expectations": ["a", {"ref": "b", "when": {"levels": {}}}]},
    ),
    ("scenario", {"kind": "scenario", "id": "s", "expectations": [{"transcript": {"rol": "user"}}]}),
    ("scenario", {"kind": "scenario", "id": "s", "checks": [{"id": "a", "kind": "answer", "equals": None}]}),
    ("matrix", {"kind": "matrix", "id": "m", "cells": []}),
    ("matrix", {"kind": "matrix", "id": "m", "factors": {"tool": []}}),
    ("matrix", {"kind": "matrix", "id": "m", "scenarios": []}),
    ("matrix", {"kind": "matrix", "id": "m", "scenarios": {"tags": [], "family": "a"}}),
    ("matrix", {"kind": "matrix", "id": "m", "versions": {"a": {"label": "x"}}}),
    ("matrix", {"kind": "matrix", "id": "m", "versions": {"a": {"label": "x"}, "b": {"label": "y"}}}),
    ("prices", {"kind": "prices", "version": "1", "models": {"m": {"input": 1, "output": 2.5}}}),
    ("prices", {"kind": "prices", "version": "1", "models": {"m": {"input": -1, "output": 2.5}}}),
    ("prices", {"kind": "prices", "version": "1", "models": {"m": {"input": float("nan"), "output": 1}}}),
    ("prices", {"kind": "prices", "version": "1", "models": {"m": {"input": 1, "output": float("inf")}}}),
    ("prices", {"kind": "prices", "version": "", "models": {}}),
]


@pytest.mark.parametrize(("kind", "data"), SAMPLES)
def test_cerberus_and_pydantic_agree(kind: str, data: dict[str, Any]) -> None:
    _agree(KINDS[kind], data)


def _agree(model: Any, data: dict[str, Any]) -> None:
    """The raw check and the typed model accept and refuse `data` alike."""
    doc, _ = parse("x.yaml", "{}")
    doc.data = data
    raw_ok = not check(doc, model)
    try:
        model.model_validate(data)
        typed_ok = True
    except ValidationError:
        typed_ok = False
    assert raw_ok == typed_ok


SCRIPTS: list[dict[str, Any]] = [
    {"seed": 1, "steps": [{"write": {"path": "a", "content": "b"}}, {"read_trace": None}]},
    {
        "steps": [
            {"choose": [{"weight": "$skill", "steps": [{"run": "true", "when": {"not": {"chance": 0.5}}}]}]}
        ]
    },
    {"steps": [{"repeat": {"times": "forever", "steps": [{"ask": {"text": "hi", "on_error": "continue"}}]}}]},
    {"steps": [{"repeat": {"times": "twice"}}]},
    {"steps": [{"edit": {"path": "a"}}]},
    {"steps": [{"when": {"on_pth": "ruff"}, "run": "x"}]},
    {"scenarios": {"default": [{"exit": 0}], "s": [{"sleep": -1}]}},
    {"scenarios": {"s": {"run": "x"}}},
]


@pytest.mark.parametrize("data", SCRIPTS)
def test_cerberus_and_pydantic_agree_on_scripts(data: dict[str, Any]) -> None:
    _agree(ScriptDoc, data)
