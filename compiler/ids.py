"""Ids: slugs, because they name folders, files and job ids (`retries/<step>-attempt-01`); and the
dotted paths that name out-of-tree plug-ins."""

from __future__ import annotations

import re
from typing import Any

from compiler.errors import Collector
from compiler.specs.base import SLUG
from compiler.yamlio import Doc, Path_, dotted

_SLUG = re.compile(SLUG)
DOTTED = r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*[.:][A-Za-z_]\w*$"
"""An out-of-tree plug-in's name: `pkg.mod:Class` (or `pkg.mod.Class`)."""
_DOTTED = re.compile(DOTTED)


def is_dotted(name: str) -> bool:
    """Whether a name is an out-of-tree plug-in's dotted path."""
    return bool(_DOTTED.fullmatch(name))


HINT = "use lowercase letters, digits and - _ . + (starting with a letter or digit)"


def check_slug(c: Collector, doc: Doc, path: Path_, value: Any, what: str, *, key: bool = False) -> bool:
    """Ids are slugs; report one that is not (at its key when the id is a map key)."""
    if isinstance(value, str) and _SLUG.fullmatch(value):
        return True
    c.add(doc.loc(path, key=key), dotted(path), "E110", f"{what} {value!r} is not a slug", HINT)
    return False
