"""The base of every contract model and the contract's version."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer

SCHEMA_VERSION = 1
"""Version of manifest.json and job files; bump on a change an older reader would misread."""


class Frozen(BaseModel):
    """Base of every contract model: immutable, unknown keys refused."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class OmitUnset(Frozen):
    """A contract model whose optional features stay out of its JSON while unset (None): a spec that
    does not use them keeps its job hashes and its byte-identical generated/."""

    _omit_unset: ClassVar[tuple[str, ...]] = ()

    @model_serializer(mode="wrap")
    def _without_unset(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        for name in self._omit_unset:
            if data.get(name) is None:
                data.pop(name, None)
        return data
