"""The names spec files declare, valid or not: what makes a reference across files unknown.

Every reference to another spec by name (a check's `kind:`, an `extends:` parent, a matrix's
`agents:` and `scenarios:`, an include/exclude or constraint `agent:`/`scenario:`, a scenario's
`expectations:`) is resolved the same way: a valid spec of that name is used; a name no file
declares is an error at the reference; a name a file declares whose spec has errors of its own
(it does not parse, its `kind:` or `id:` is wrong, it fails validation) is neither. Its own
errors, at its own file, are the fix; its uses cannot be checked until then and are left out,
not reported as "unknown" once per use, burying that fix.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

from compiler.load import SCENARIO_DIR, Sources

ANY = "*"
"""The kind of a file whose kind is unknown: its name may be a spec of any kind."""
FOLDER_KINDS = {
    "specs/agents": "agent",
    "specs/checks": "check-kind",
    "specs/matrices": "matrix",
    "specs/expectations": "expectation",
    SCENARIO_DIR: "scenario",
}
"""The conventional folder of each kind (docs/spec-language.md): a file there whose `kind:`
cannot be read is taken to be one."""


def _guess(rel: str) -> tuple[str, str]:
    """(kind, name) of a file whose own `kind:` or `id:` cannot be read: a scenario is named by its
    folder, another spec by its file name; the kind is its folder's, if a conventional one."""
    parts = rel.split("/")
    if parts[0] == SCENARIO_DIR and len(parts) >= 2:
        return "scenario", parts[1]
    kind = next((k for folder, k in FOLDER_KINDS.items() if rel.startswith(f"{folder}/")), ANY)
    return kind, parts[-1].split(".")[0]


@dataclass(frozen=True)
class Declared:
    """Spec kind -> the names files declare for it (ANY: files of unknown kind)."""

    names: Mapping[str, frozenset[str]] = field(default_factory=dict)

    def declares(self, kind: str, name: object) -> bool:
        """Whether some file declares a spec of this kind (or of a kind unknown) by this name."""
        return isinstance(name, str) and any(name in self.names.get(k, ()) for k in (kind, ANY))

    def broken(self, kind: str, name: object, valid: Collection[str]) -> bool:
        """Whether `name` is declared but is not among the `valid` specs of its kind: it has errors
        of its own, reported at its file, and a reference to it is left out silently."""
        return not (isinstance(name, str) and name in valid) and self.declares(kind, name)

    def unknown(self, kind: str, name: object, valid: Collection[str]) -> bool:
        """Whether a reference to `name` is an error: no valid spec of `kind` has it, nor does any
        file declare it."""
        return not (isinstance(name, str) and name in valid) and not self.declares(kind, name)


def declared(src: Sources, kinds: Iterable[str]) -> Declared:
    """Every name the parsed and unparsed spec files declare, by kind (`kinds`: the valid `kind:`s)."""
    known = set(kinds)
    names: dict[str, set[str]] = {}
    for rel in src.unparsed:
        kind, name = _guess(rel)
        names.setdefault(kind, set()).add(name)
    for doc in src.docs:
        kind, name = _guess(doc.file)
        data = doc.data if isinstance(doc.data, dict) else {}
        if isinstance(data.get("kind"), str) and data["kind"] in known:
            kind = data["kind"]
        if isinstance(data.get("id"), str):
            name = data["id"]
        names.setdefault(kind, set()).add(name)
    return Declared({kind: frozenset(found) for kind, found in names.items()})
