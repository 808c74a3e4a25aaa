"""One loader for every plugin point: check kinds, isolation, executors and adapters.

Each point keeps a small table of short names (`Plugins`); anything out of tree is named by a
dotted path, `pkg.mod:attr` or `pkg.mod.attr` (for adapters, which run as `python -m`, the
module `pkg.mod`). An unknown short name is refused with the valid ones listed. A module is
imported only when one of its plugins is loaded, so a plugin's heavy imports cost nothing until
it is used.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.errors import UsageError


@dataclass(frozen=True)
class Plugins:
    """One plugin point: its short names and what they load."""

    what: str
    """What one plugin is called in messages ("isolation", "check kind", ...)."""
    table: Mapping[str, str]
    """Short name -> `pkg.mod:attr` (`pkg.mod` for plugins run as a module)."""
    error: type[Exception] = UsageError
    """What an unknown or broken plugin raises at this point."""
    also: tuple[str, ...] = ()
    """Names the point handles before its table (`auto` isolation, the `command` adapter),
    listed with the valid ones."""
    dotted: str = "pkg.mod:attr"
    """How an out-of-tree plugin is named, for the error message."""

    def names(self) -> list[str]:
        """Every valid short name, sorted."""
        return sorted({*self.table, *self.also})

    def target(self, name: str) -> str:
        """What `name` points at: its table entry, or the name itself when it is a dotted path."""
        if name in self.table:
            return self.table[name]
        if "." in name or ":" in name:
            return name
        valid = ", ".join(self.names())
        raise self.error(f"unknown {self.what} {name!r}; valid: {valid}, or a dotted path {self.dotted}")

    def load(self, name: str) -> Any:
        """The object `name` points at (a class or a factory), its module imported now."""
        target = self.target(name)
        module, _, attr = target.partition(":") if ":" in target else target.rpartition(".")
        try:
            return getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as exc:
            raise self.error(f"cannot load {self.what} {name!r} from {target!r}: {exc}") from None
