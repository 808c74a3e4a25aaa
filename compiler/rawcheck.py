"""cerberus on raw documents, with its schemas derived from the pydantic spec models.

The models are the one source of truth: `cerberus_schema(Model)` walks their field
annotations, so a field added to a model is accepted by the raw check at once.
Errors come back as `SpecError`s with the position of the offending node and, for
unknown keys, a "did you mean".
"""

from __future__ import annotations

import json
import math
import types
import typing
from functools import cache, lru_cache
from typing import Annotated, Any, Literal, Union

import cerberus
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from compiler.errors import Collector, SpecError, did_you_mean
from compiler.yamlio import Doc, Path_, dotted

_SCALARS = {str: "string", int: "integer", float: "number", bool: "boolean"}
_REGISTRY = cerberus.schema.SchemaRegistry()
"""Schemas of the spec models by name: a model that contains itself (a predicate's `all:`) refers to its name."""
_BUILDING: set[str] = set()


def _rule(tp: Any) -> dict[str, Any]:
    origin = typing.get_origin(tp)
    if tp is Any or tp is object:
        return {"nullable": True}
    if origin is Annotated:
        base, *extra = typing.get_args(tp)
        meta = [m for x in extra for m in (x.metadata if isinstance(x, FieldInfo) else [x])]
        return _bounds(_rule(base), meta)
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        nullable = len(args) < len(typing.get_args(tp))
        rule: dict[str, Any] = _rule(args[0]) if len(args) == 1 else {"anyof": [_rule(a) for a in args]}
        if nullable:
            rule["nullable"] = True
        return rule
    if origin is Literal:
        values = list(typing.get_args(tp))
        return {"type": _SCALARS[type(values[0])], "allowed": values}
    if origin in (list, tuple):
        return {"type": "list", "schema": _rule(typing.get_args(tp)[0])}
    if origin is dict:
        return {"type": "dict", "keysrules": {"type": "string"}, "valuesrules": _rule(typing.get_args(tp)[1])}
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        if _name(tp) in _BUILDING:  # recursion: refer to the schema by name, resolved at validation time
            return {"type": "dict", "schema": _name(tp)}
        return {"type": "dict", "schema": cerberus_schema(tp)}
    if tp in _SCALARS:
        # YAML's `1` is a valid float; a bool is never a number.
        return {"type": ["integer", "float"]} if tp is float else {"type": _SCALARS[tp]}
    raise TypeError(f"no cerberus rule for {tp!r}")


def _name(model: type[BaseModel]) -> str:
    return f"{model.__module__}.{model.__qualname__}"


def _bounds(rule: dict[str, Any], metadata: list[Any]) -> dict[str, Any]:
    """A field's bounds (pydantic `ge`/`gt`/`le`, `min_length`) as cerberus `min`/`gt`/`max`, `minlength`."""
    for m in metadata:
        if getattr(m, "min_length", None) is not None:
            rule["minlength"] = m.min_length
        if getattr(m, "ge", None) is not None:
            rule["min"] = m.ge
        if getattr(m, "gt", None) is not None:
            rule["gt"] = m.gt
        if getattr(m, "le", None) is not None:
            rule["max"] = m.le
        if getattr(m, "allow_inf_nan", None) is False:
            rule["finite"] = True
    return rule


@cache
def cerberus_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The cerberus schema of a pydantic model (keys by alias, required and minimums as in the model)."""
    _BUILDING.add(_name(model))
    try:
        schema: dict[str, Any] = {}
        for name, info in model.model_fields.items():
            rule = _bounds(_rule(info.annotation), info.metadata)
            rule["required"] = info.is_required()
            schema[info.alias or name] = rule
    finally:
        _BUILDING.discard(_name(model))
    _REGISTRY.add(_name(model), schema)
    return schema


class _Validator(cerberus.Validator):  # type: ignore[misc]
    """cerberus with YAML's integers: `true` is a boolean, never the integer 1 (as in pydantic strict)."""

    types_mapping = {  # noqa: RUF012  (cerberus reads it from the class)
        **cerberus.Validator.types_mapping,
        "integer": cerberus.TypeDefinition("integer", (int,), (bool,)),
    }

    def _validate_gt(self, bound: float, field: str, value: Any) -> None:
        """{'type': 'number'}"""
        if isinstance(value, int | float) and not isinstance(value, bool) and not value > bound:
            self._error(field, f"must be greater than {bound}")

    def _validate_finite(self, finite: bool, field: str, value: Any) -> None:
        """{'type': 'boolean'}"""
        if finite and isinstance(value, float) and not math.isfinite(value):
            self._error(field, "is not a finite number")


@cache
def _validator(model: type[BaseModel]) -> cerberus.Validator:
    return _Validator(cerberus_schema(model), allow_unknown=False, schema_registry=_REGISTRY)


@lru_cache(maxsize=65_536)
def _passes(model: type[BaseModel], canonical: str) -> bool:
    """Whether a raw document (as canonical JSON) passes; memoised, since a check entry repeats across scenarios."""
    ok: bool = _validator(model).validate(json.loads(canonical), normalize=False)  # nothing to normalize
    return ok


EXTENSION = "x-"
"""Prefix of free-form keys in a map whose keys are spec fields."""


def _model_in(tp: Any) -> type[BaseModel] | None:
    """The pydantic model a (possibly optional or union) annotation allows, if any."""
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return tp
    if typing.get_origin(tp) in (Union, types.UnionType):
        for arg in typing.get_args(tp):
            found = _model_in(arg)
            if found is not None:
                return found
    return None


def _strip(value: Any, tp: Any) -> Any:
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        model = _model_in(tp)
        if isinstance(value, dict) and model is not None:
            return drop_extensions(value, model)
        if isinstance(value, list):
            lists = [a for a in args if typing.get_origin(a) in (list, tuple)]
            return _strip(value, lists[0]) if lists else value
        if isinstance(value, dict):
            maps = [a for a in args if typing.get_origin(a) is dict]
            return _strip(value, maps[0]) if maps else value
        return value
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return drop_extensions(value, tp) if isinstance(value, dict) else value
    if origin in (list, tuple) and isinstance(value, list):
        item = typing.get_args(tp)[0]
        return [_strip(v, item) for v in value]
    if origin is dict and isinstance(value, dict):
        item = typing.get_args(tp)[1]
        return {k: _strip(v, item) for k, v in value.items()}  # keys are names: `x-` is a name here
    return value


def drop_extensions(value: dict[str, Any], model: type[BaseModel]) -> dict[str, Any]:
    """The map without its `x-*` keys, wherever a key could be a field of a spec model.

    Maps keyed by names (`negatives:`, levels, `env:`) keep them: there `x-keeps-newline` is a
    negative's name, not an extension. Free-form values (`meta:`, `Any`) are left as written.
    """
    fields = {info.alias or name: info.annotation for name, info in model.model_fields.items()}
    return {
        k: _strip(v, fields[k]) if k in fields else v
        for k, v in value.items()
        if not (isinstance(k, str) and k.startswith(EXTENSION))
    }


def _keys_at(schema: dict[str, Any], path: Path_) -> list[str]:
    """Valid keys of the map at `path` inside a document of `schema`."""
    rule: dict[str, Any] = {"type": "dict", "schema": schema}
    for part in path:
        if "anyof" in rule:
            rule = next((r for r in rule["anyof"] if r.get("type") in ("dict", "list")), {})
        if isinstance(part, int):
            rule = rule.get("schema", {})
        elif "schema" in rule:
            rule = _deref(rule["schema"]).get(part, {})
        else:
            rule = rule.get("valuesrules", {})
    if "anyof" in rule:
        rule = next((r for r in rule["anyof"] if r.get("type") == "dict"), {})
    return sorted(_deref(rule.get("schema", {})))


def _deref(schema: dict[str, Any] | str) -> dict[str, Any]:
    """A schema, or the registered schema a recursive model refers to by name."""
    if isinstance(schema, str):
        found: dict[str, Any] = _REGISTRY.get(schema) or {}
        return found
    return schema


def _type_name(rule: Any) -> str:
    if isinstance(rule, list):
        return " or ".join(_type_name(r) for r in rule)
    return {
        "dict": "a map",
        "list": "a list",
        "string": "a string",
        "integer": "an integer",
        "float": "a number",
        "number": "a number",
        "boolean": "true or false",
    }.get(str(rule), str(rule))


def describe(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    if isinstance(v, dict):
        return "a map"
    if isinstance(v, list):
        return "a list"
    return repr(v)


def _flatten(errors: Any) -> list[Any]:
    out = []
    for err in errors:
        if err.is_group_error and not err.is_logic_error:
            out.extend(_flatten(err.child_errors))
        elif err.is_logic_error and (branch := _branch(err)) is not None:
            out.extend(_flatten(branch))
        else:
            out.append(err)
    return out


def _branch(err: Any) -> list[Any] | None:
    """The errors of the one `anyof` alternative whose type the value has (a map given where a name or
    a map is allowed), so a typo inside it is reported at its key, not as "expected a string or a map"."""
    fitting = [
        errs
        for errs in err.definitions_errors.values()
        if not any(
            e.document_path == err.document_path and e.code == cerberus.errors.BAD_TYPE.code for e in errs
        )
        and not any(e.code == cerberus.errors.UNALLOWED_VALUE.code for e in errs)
    ]
    return fitting[0] if len(fitting) == 1 else None


def check(doc: Doc, model: type[BaseModel], data: Any = None, base: Path_ = ()) -> list[SpecError]:
    """Validate `data` (default: the whole document) against the model's cerberus schema."""
    value = doc.data if data is None else data
    if not isinstance(value, dict):
        return [SpecError.at(doc.loc(base), dotted(base), "E103", f"expected a map, got {describe(value)}")]
    value = drop_extensions(value, model)
    try:
        return [] if _passes(model, json.dumps(value, sort_keys=True)) else _errors(doc, model, value, base)
    except RecursionError:  # cerberus's error tree grows faster than the nesting (a deep `all:` of `all:`)
        return [
            SpecError.at(
                doc.loc(base), dotted(base), "E001", "nested too deeply to check", "nest fewer levels"
            )
        ]


def _errors(doc: Doc, model: type[BaseModel], value: dict[str, Any], base: Path_) -> list[SpecError]:
    """Each error cerberus finds in a value that fails the model's schema, as a SpecError."""
    schema = cerberus_schema(model)
    v = _validator(model)
    v.validate(value, normalize=False)
    out: list[SpecError] = []
    for err in _flatten(v._errors):
        path: Path_ = (*base, *err.document_path)
        where = dotted(path)
        code = err.code
        if code == cerberus.errors.UNKNOWN_FIELD.code:
            out.append(
                SpecError.at(
                    doc.loc(path, key=True),
                    where,
                    "E101",
                    f"unknown key '{path[-1]}'",
                    did_you_mean(str(path[-1]), _keys_at(schema, tuple(err.document_path[:-1]))),
                )
            )
        elif code == cerberus.errors.REQUIRED_FIELD.code:
            out.append(SpecError.at(doc.loc(path[:-1]), where, "E102", f"missing required key '{path[-1]}'"))
        elif code == cerberus.errors.BAD_TYPE.code or code == cerberus.errors.NOT_NULLABLE.code:
            out.append(
                SpecError.at(
                    doc.loc(path),
                    where,
                    "E103",
                    f"expected {_type_name(err.constraint)}, got {describe(err.value)}",
                )
            )
        elif code == cerberus.errors.MIN_VALUE.code:
            out.append(
                SpecError.at(
                    doc.loc(path),
                    where,
                    "E104",
                    f"{describe(err.value)} is less than the minimum {err.constraint}",
                )
            )
        elif code == cerberus.errors.MIN_LENGTH.code:
            out.append(_too_few(doc, path, err.value, err.constraint))
        elif code == cerberus.errors.MAX_VALUE.code:
            out.append(
                SpecError.at(
                    doc.loc(path),
                    where,
                    "E104",
                    f"{describe(err.value)} is more than the maximum {err.constraint}",
                )
            )
        elif code == cerberus.errors.CUSTOM.code and err.info:
            out.append(SpecError.at(doc.loc(path), where, "E104", f"{describe(err.value)} {err.info[0]}"))
        elif code == cerberus.errors.UNALLOWED_VALUE.code:
            allowed = ", ".join(str(a) for a in err.constraint)
            out.append(
                SpecError.at(
                    doc.loc(path),
                    where,
                    "E104",
                    f"{describe(err.value)} is not allowed",
                    f"one of: {allowed}",
                )
            )
        elif err.is_logic_error and (
            unallowed := [
                e for e in _flatten(err.child_errors) if e.code == cerberus.errors.UNALLOWED_VALUE.code
            ]
        ):
            allowed = ", ".join(str(a) for a in unallowed[0].constraint)
            out.append(
                SpecError.at(
                    doc.loc(path),
                    where,
                    "E104",
                    f"{describe(err.value)} is not allowed",
                    f"one of: {allowed}, or another type: "
                    + " or ".join(
                        _type_name(r.get("type", "any")) for r in err.constraint if "allowed" not in r
                    ),
                )
            )
        elif err.is_logic_error:
            kinds = [_type_name(r.get("type", "any")) for r in err.constraint]
            out.append(
                SpecError.at(
                    doc.loc(path), where, "E103", f"expected {' or '.join(kinds)}, got {describe(err.value)}"
                )
            )
        else:
            out.append(
                SpecError.at(doc.loc(path), where, "E100", f"invalid value ({err.rule}: {err.constraint})")
            )
    return out


def _too_few(doc: Doc, path: Path_, value: Any, minimum: int) -> SpecError:
    """A list or map with fewer items than its field needs: at its key (an empty list selects nothing)."""
    what = "list" if isinstance(value, list) else "map" if isinstance(value, dict) else "text"
    count = f"{len(value)} entry" if len(value) == 1 else f"{len(value)} entries"
    message = f"the {what} is empty" if not value else f"the {what} has {count}; it needs at least {minimum}"
    hint = f"give at least {minimum}, or leave the key out" if what != "text" else ""
    return SpecError.at(doc.loc(path, key=True), dotted(path), "E104", message, hint)


def model_of(c: Collector, doc: Doc, model: type[BaseModel], data: Any = None, base: Path_ = ()) -> Any:
    """cerberus, then pydantic; None (and errors collected) when the document is invalid."""
    errors = check(doc, model, data, base)
    if errors:
        c.extend(errors)
        return None
    try:
        return model.model_validate(drop_extensions(doc.data if data is None else data, model))
    except ValidationError as exc:  # cerberus and the model agree by construction; this is a safety net
        for e in exc.errors():
            path = (*base, *e["loc"])
            c.add(doc.loc(path), dotted(path), "E100", e["msg"].removeprefix("Value error, "))
        return None
