"""What every spec model shares: frozen, unknown keys refused, a docstring per field."""

from __future__ import annotations

import typing
from typing import Annotated, Any, Optional

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


def partial(model: type[BaseModel], name: str) -> type[SpecModel]:
    """A spec model with the fields of a contract model, each optional with default None.

    Matrix `limits:`/`options:` and project `defaults:` override only what they name, and
    their fields must be the contract's own, so they are derived from it, never retyped.
    """
    fields: dict[str, Any] = {}
    for fname, info in model.model_fields.items():
        tp: Any = Optional[_lists(info.annotation)]  # noqa: UP045  (a runtime type, not an annotation)
        if info.metadata:  # the contract's minimums too
            tp = Annotated.__class_getitem__((tp, *info.metadata))  # type: ignore[attr-defined]
        fields[fname] = (tp, Field(default=None, description=info.description))
    made: type[SpecModel] = create_model(
        name, __base__=SpecModel, __doc__=f"Overrides of {model.__name__}.", **fields
    )
    return made
