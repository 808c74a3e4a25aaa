"""Paths in specs: project-relative after resolution, never escaping the project or the workspace."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping

from compiler.errors import Collector, Loc
from compiler.yamlio import Doc, Path_, dotted

LINK_HINT = "a path in a spec stays inside the project: copy what it links to into the project"


def rel_path(c: Collector, doc: Doc, path: Path_, value: str, *, base_file: str | None = None) -> str | None:
    """A path written in a spec, made project-relative; None (and an error) when it escapes."""
    loc = doc.loc(path)
    if value.startswith("/") or "\\" in value:
        c.add(loc, dotted(path), "E210", f"path {value!r} must be relative and use '/'")
        return None
    base = posixpath.dirname(base_file or loc.file)
    joined = posixpath.normpath(posixpath.join(base, value))
    if joined == ".." or joined.startswith("../"):
        c.add(loc, dotted(path), "E211", f"path {value!r} escapes the project")
        return None
    return joined


def ws_path(c: Collector, doc: Doc, path: Path_, value: str) -> bool:
    """A workspace-relative path or glob: relative, no '..'."""
    parts = value.split("/")
    if value.startswith("/") or ".." in parts or not value:
        c.add(
            doc.loc(path),
            dotted(path),
            "E212",
            f"workspace path {value!r} must be relative and stay in the workspace",
        )
        return False
    if "**" in value.replace("/**/", "/").removeprefix("**/").removesuffix("/**") and value != "**":
        c.add(doc.loc(path), dotted(path), "E213", f"glob {value!r}: '**' must be a whole path segment")
        return False
    return True


def not_a_link_out(c: Collector, loc: Loc, path: Path_, rel: str, outside: Mapping[str, str]) -> bool:
    """False (and E211) when the project path `rel` is a link to a place outside the project."""
    target = outside.get(rel)
    if target is None:
        return True
    c.add(loc, dotted(path), "E211", f"'{rel}' is a link to {target}, outside the project", LINK_HINT)
    return False
