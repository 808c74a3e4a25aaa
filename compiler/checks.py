"""Check entries: validated per kind, user kinds compiled to concrete `command` checks.

A user check kind becomes a `command` check here (its run template rendered with the
check's parameters, its result reader made concrete), so the runner and the grader
only ever see built-in kinds.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from pydantic import BaseModel, Field, create_model

from compiler.contract import CheckSpec
from compiler.declared import Declared
from compiler.errors import Collector, did_you_mean
from compiler.rawcheck import check, model_of
from compiler.render import render_field
from compiler.specs import CheckKindDoc
from compiler.specs.base import SpecModel
from compiler.specs.checks import BUILTIN, TEMPLATE_FIELDS, CheckCommon
from compiler.yamlio import Doc, Path_, dotted

_COMMON = set(CheckCommon.model_fields)
BUILTIN_PREFIX = "builtin:"
"""`kind: builtin:<name>` is the built-in kind even where a project kind shadows it."""
_PY = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "list": list[Any],
    "dict": dict[str, Any],
    "any": Any,
}


def _param_fields(params_json: str) -> dict[str, Any]:
    """Each parameter of a kind as an optional field of its type."""
    return {
        name: (_PY[p.get("type", "any")] | None, Field(default=None, description=p.get("description")))
        for name, p in json.loads(params_json).items()
    }


@cache
def _user_model(kind_id: str, params_json: str) -> type[BaseModel]:
    fields = _param_fields(params_json)
    fields["with_"] = (
        dict[str, Any] | None,
        Field(default=None, alias="with", description="Parameters of the kind."),
    )
    return create_model(f"Check_{kind_id}", __base__=CheckCommon, **fields)


@cache
def _params_model(kind_id: str, params_json: str) -> type[BaseModel]:
    return create_model(f"Params_{kind_id}", __base__=SpecModel, **_param_fields(params_json))


def _params_json(kind: CheckKindDoc) -> str:
    return json.dumps({k: v.model_dump() for k, v in kind.params.items()}, sort_keys=True)


def user_model(kind: CheckKindDoc) -> type[BaseModel]:
    """The model of a check entry of a user kind: common fields, its params inline, or `with:`."""
    return _user_model(kind.id, _params_json(kind))


def params_model(kind: CheckKindDoc) -> type[BaseModel]:
    """The model of a user kind's parameters alone (a check's `with:`), each typed as the kind says."""
    return _params_model(kind.id, _params_json(kind))


@cache
def default_model(type_name: str) -> type[BaseModel]:
    """A model whose one field, `default`, has a parameter type: a kind's default is of its type."""
    field: Any = (_PY[type_name] | None, Field(default=None, description="The parameter's default."))
    return create_model(f"Default_{type_name}", __base__=SpecModel, default=field)


def resolve_check(
    c: Collector,
    doc: Doc,
    i: int,
    raw: Any,
    kinds: dict[str, CheckKindDoc],
    ctx: dict[str, Any],
    kind_docs: dict[str, Doc],
    names: Declared,
) -> CheckSpec | None:
    """One check entry, validated against its kind, as a built-in-kind CheckSpec (None on errors).

    A check of a project kind that failed validation (`names` declares it, `kinds` has it not) is
    left out unchecked: the kind's errors are reported at its file. A check of a kind with other
    errors of its own (its result reader, a default, its authority, its `run` template, which may
    fail to render only with a check's values) has its parameters checked, then is left out: those
    errors are reported at the kind's file (`kind_docs`), once however many checks use it."""
    path: Path_ = ("checks", i)
    if not isinstance(raw, dict):
        c.add(doc.loc(path), dotted(path), "E103", "a check must be a map with id and kind")
        return None
    kind = raw.get("kind")
    forced = False
    if isinstance(kind, str) and kind.startswith(BUILTIN_PREFIX) and kind[len(BUILTIN_PREFIX) :] in BUILTIN:
        # `builtin:pytest` names the built-in even where the project has a kind of that name
        forced, kind = True, kind[len(BUILTIN_PREFIX) :]
        raw = {**raw, "kind": kind}
    elif names.broken("check-kind", kind, kinds):
        return None  # the project's kind, which would win over a built-in of its name, has errors
    if not isinstance(kind, str) or (kind not in BUILTIN and kind not in kinds):
        c.add(
            doc.loc((*path, "kind")),
            dotted((*path, "kind")),
            "E140",
            f"unknown check kind {kind!r}",
            did_you_mean(str(kind), [*BUILTIN, *kinds]),
        )
        return None
    # A project's own kind wins over a built-in of the same name: a built-in added later (as
    # `pytest` was) must not change what an existing project's checks mean.
    user = None if forced else kinds.get(kind)
    model = user_model(user) if user else BUILTIN[kind]
    spec = model_of(c, doc, model, raw, path)
    if spec is None:
        return None
    params = {k: v for k, v in spec.model_dump(by_alias=True, exclude_none=True).items() if k not in _COMMON}
    if user is None:
        for name in TEMPLATE_FIELDS.get(kind, ()):
            if name in params:
                params[name] = render_field(c, doc, (*path, name), params[name], ctx)
        if kind == "command" and "exit" not in params and "result" not in params:
            params["exit"] = 0
        if kind == "answer" and "expected" in params:  # seed 000 names the value `expected`
            if "equals" in params:
                c.add(
                    doc.loc((*path, "expected"), key=True),
                    dotted((*path, "expected")),
                    "E100",
                    "give the expected value once: `equals` or `expected`, not both",
                )
            params["equals"] = params.pop("expected")
        return CheckSpec(
            id=spec.id,
            kind=kind,
            layer=spec.layer or "agent",
            authority=spec.authority,
            severity=spec.severity or "error",
            timeout_s=spec.timeout_s or 60.0,
            params=params,
        )
    before = len(c.errors)
    # Parameter names are fields of the kind: an `x-` key among them is an extension.
    given = {k: v for k, v in (params.pop("with", {}) or {}).items() if not k.startswith("x-")}
    known = {k: v for k, v in given.items() if k in user.params}
    c.extend(check(doc, params_model(user), known, (*path, "with")))  # typed as inline ones are
    for k in list(params):
        given.setdefault(k, params.pop(k))
    values: dict[str, Any] = {}
    for name, p in user.params.items():
        if name in given:
            values[name] = given.pop(name)
        elif p.required:
            c.add(
                doc.loc(path),
                dotted((*path, "with", name)),
                "E102",
                f"check kind '{kind}' needs parameter '{name}'",
            )
        else:
            values[name] = p.default
    for extra in given:
        c.add(
            doc.loc((*path, "with", extra), key=True),
            dotted((*path, "with", extra)),
            "E101",
            f"unknown parameter '{extra}' of check kind '{kind}'",
            did_you_mean(extra, user.params),
        )
    if len(c.errors) > before:
        return None  # the template would only repeat the missing-parameter errors
    kdoc = kind_docs.get(kind)
    if kdoc is not None and any(e.file == kdoc.file for e in c.errors):
        # The kind has errors of its own (rules.check_kind, or its template failed to render for an
        # earlier check), reported at the kind, once: its parameters are checked, the rest is not.
        return None
    before = len(c.errors)
    run = (
        render_field(c, kdoc, ("run",), user.run, {**ctx, **values, "params": values})
        if kdoc is not None
        else render_field(c, doc, path, user.run, {**ctx, **values, "params": values})
    )
    if len(c.errors) > before:
        return None
    result = user.result.model_dump(exclude_none=True)
    count = result.get("count")
    if count is not None and count.get("max_param"):
        count["max"] = values.get(count.pop("max_param"))
    out: dict[str, Any] = {"run": run, "with": values}
    if result:
        out["result"] = result
    else:
        out["exit"] = 0
    if user.env:
        out["env"] = dict(user.env)
    return CheckSpec(
        id=spec.id,
        kind="command",
        source_kind=kind,
        layer=spec.layer or user.layer or "agent",
        authority=spec.authority or user.authority,
        severity=spec.severity or user.severity or "error",
        timeout_s=spec.timeout_s or user.timeout_s or 60.0,
        params=out,
    )
