"""What every spec model shares: frozen, unknown keys refused, a docstring per field."""

from __future__ import annotations

import typing
from typing import Annotated, Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, create_model

SLUG = r"^[a-z0-9][a-z0-9_.+-]*$"
"""Ids of agents, scenarios, matrices, check kinds, factors and levels."""


class SpecModel(BaseModel):
    """Base of every spec model (the validated form of one YAML document or part of one)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


def _lists(tp: Any) -> Any:
    """tuple[X, ...] -> list[X]: YAML has lists, and spec models are strict."""
    if typing.get_origin(tp) is tuple:
        return list[typing.get_args(tp)[0]]  # type: ignore[misc]
    return tp


def partial(model: type[BaseModel], name: str, *, off: str | None = None) -> type[SpecModel]:
    """A spec model with the fields of a contract model, each optional with default None.

    Matrix `limits:`/`options:` and project `defaults:` override only what they name, and
    their fields must be the contract's own, so they are derived from it, never retyped.
    With `off`, a field the contract allows to be None also takes that word (the spec's way
    to say None: YAML null already means "not set here").
    """
    fields: dict[str, Any] = {}
    for fname, info in model.model_fields.items():
        tp: Any = _lists(info.annotation)
        switchable = off is not None and type(None) in typing.get_args(info.annotation)
        if switchable:  # int | None becomes int | "none", the contract's minimums on the number
            tp = next(a for a in typing.get_args(info.annotation) if a is not type(None))
        if info.metadata:  # the contract's minimums too
            tp = Annotated.__class_getitem__((tp, *info.metadata))  # type: ignore[attr-defined]
        if switchable:
            tp = tp | Literal[off]
        tp = Optional[tp]  # noqa: UP045  (a runtime type, not an annotation)
        fields[fname] = (tp, Field(default=None, description=info.description))
    made: type[SpecModel] = create_model(
        name, __base__=SpecModel, __doc__=f"Overrides of {model.__name__}.", **fields
    )
    return made
