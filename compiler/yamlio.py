"""Reading spec files into plain values plus the line and column of every node.

YAML 1.2 core scalars (only `true`/`false` are booleans, so `network: off` stays the
string "off"), duplicate keys, `<<:` merge keys and custom tags are errors. Seed
000's `scenario.json` is read by the same code (JSON is YAML 1.2), so its errors
carry positions too. `x-*` keys are kept here: whether one is an extension depends on
the map it sits in (a field map, where it is dropped by `compiler.rawcheck`, or a map keyed
by names, such as `negatives:`, where `x-keeps-newline` is just a name).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from compiler.errors import Loc, SpecError

Path_ = tuple[str | int, ...]
"""A key path inside a document: map keys and list indexes."""

_BaseLoader: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Composer(_BaseLoader):  # type: ignore[misc]
    """A loader that resolves nothing implicitly: every plain scalar stays a string node."""

    yaml_implicit_resolvers: dict[Any, Any] = {}  # noqa: RUF012  (PyYAML looks it up on the class)


_STR, _SEQ, _MAP = "tag:yaml.org,2002:str", "tag:yaml.org,2002:seq", "tag:yaml.org,2002:map"
_NULL = re.compile(r"^(?:~|null|Null|NULL|)$")
_BOOL = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_INT = re.compile(r"^[-+]?[0-9]+$")
_OCT = re.compile(r"^0o[0-7]+$")
_HEX = re.compile(r"^0x[0-9a-fA-F]+$")
_FLOAT = re.compile(r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$")
_INF = re.compile(r"^[-+]?\.(?:inf|Inf|INF)$")
_NAN = re.compile(r"^\.(?:nan|NaN|NAN)$")


def plain_scalar(text: str) -> Any:
    """The value of a plain (unquoted) scalar under the YAML 1.2 core schema."""
    if _NULL.match(text):
        return None
    if text in _BOOL:
        return _BOOL[text]
    if _INT.match(text):
        return int(text)
    if _OCT.match(text):
        return int(text[2:], 8)
    if _HEX.match(text):
        return int(text[2:], 16)
    if _FLOAT.match(text):
        return float(text)
    if _INF.match(text):
        return float("-inf") if text.startswith("-") else float("inf")
    if _NAN.match(text):
        return float("nan")
    return text


@dataclass
class Doc:
    """One loaded document: its value and where each node of it sits."""

    file: str
    data: Any
    values: dict[Path_, Loc] = field(default_factory=dict)
    keys: dict[Path_, Loc] = field(default_factory=dict)
    blocks: dict[Path_, Loc] = field(default_factory=dict)
    """Block scalars (`|`, `>`): where their first content line starts, to place line k of a template."""

    def line_loc(self, path: Path_, line: int) -> Loc:
        """Where line `line` (1-based) of the string at `path` is: exact in a block scalar,
        the value's start otherwise (a quoted or folded string has no line of its own)."""
        first = self.blocks.get(tuple(path))
        if first is None:
            return self.loc(path)
        return first._replace(line=first.line + line - 1)

    def loc(self, path: Path_, *, key: bool = False) -> Loc:
        """Where the node at `path` (or its key) is; falls back to the nearest ancestor."""
        p = tuple(path)
        while True:
            table = self.keys if key else self.values
            if p in table:
                return table[p]
            if key and p in self.values:
                return self.values[p]
            if not p:
                return Loc(self.file, 1, 1)
            p = p[:-1]


def dotted(path: Path_) -> str:
    """`checks[2].with.code` from ('checks', 2, 'with', 'code')."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _describe_key(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return "a number"


def _mark(file: str, node: yaml.Node) -> Loc:
    return Loc(file, node.start_mark.line + 1, node.start_mark.column + 1)


MAX_NODES = 200_000
"""Nodes one document may expand to: aliases are allowed, an alias bomb is not."""


MAX_DEPTH = 100
"""Levels of nesting one document may have: far past any spec, short of Python's recursion limit."""


class _TooLarge(Exception):
    pass


class _TooDeep(Exception):
    def __init__(self, node: yaml.Node) -> None:
        super().__init__()
        self.node = node


def _block_start(file: str, node: yaml.ScalarNode, lines: list[str]) -> Loc:
    """The first content line of a block scalar (the line after its `|`/`>` header) and its indent."""
    n = node.start_mark.line + 1
    while n < len(lines) and not lines[n].strip():
        n += 1
    text = lines[n] if n < len(lines) else ""
    return Loc(file, n + 1, len(text) - len(text.lstrip(" ")) + 1)


def _build(doc: Doc, node: yaml.Node, path: Path_, errors: list[SpecError], lines: list[str]) -> Any:
    if len(doc.values) >= MAX_NODES:
        raise _TooLarge
    if len(path) > MAX_DEPTH:
        raise _TooDeep(node)
    doc.values[path] = _mark(doc.file, node)
    if isinstance(node, yaml.ScalarNode):
        if node.style in ("|", ">"):
            doc.blocks[path] = _block_start(doc.file, node, lines)
        if node.tag != _STR:
            errors.append(
                SpecError.at(
                    _mark(doc.file, node),
                    dotted(path),
                    "E002",
                    f"custom tag {node.tag!r} is not allowed",
                    "write the plain value",
                )
            )
        return plain_scalar(node.value) if not node.style else node.value
    if isinstance(node, yaml.SequenceNode):
        if node.tag != _SEQ:
            errors.append(
                SpecError.at(
                    _mark(doc.file, node), dotted(path), "E002", f"custom tag {node.tag!r} is not allowed"
                )
            )
        return [_build(doc, item, (*path, i), errors, lines) for i, item in enumerate(node.value)]
    assert isinstance(node, yaml.MappingNode)
    if node.tag != _MAP:
        errors.append(
            SpecError.at(
                _mark(doc.file, node), dotted(path), "E002", f"custom tag {node.tag!r} is not allowed"
            )
        )
    out: dict[str, Any] = {}
    for knode, vnode in node.value:
        kloc = _mark(doc.file, knode)
        if not isinstance(knode, yaml.ScalarNode):
            errors.append(SpecError.at(kloc, dotted(path), "E003", "a key must be a plain string"))
            continue
        key = knode.value if knode.style else plain_scalar(knode.value)
        if not isinstance(key, str):
            errors.append(
                SpecError.at(
                    kloc,
                    dotted((*path, knode.value)),
                    "E003",
                    f"key {knode.value!r} is {_describe_key(key)}, not a string",
                    f'quote it ("{knode.value}") if you mean the text',
                )
            )
            continue
        if key == "<<" and not knode.style:
            errors.append(
                SpecError.at(
                    kloc,
                    dotted((*path, key)),
                    "E004",
                    "YAML merge keys (<<) are not supported",
                    "use `extends:` to inherit from another spec",
                )
            )
            continue
        if key in out:
            first = doc.keys[(*path, key)]
            errors.append(
                SpecError.at(
                    kloc,
                    dotted((*path, key)),
                    "E005",
                    f"duplicate key '{key}'",
                    f"first defined at line {first.line}",
                )
            )
            continue
        doc.keys[(*path, key)] = kloc
        out[key] = _build(doc, vnode, (*path, key), errors, lines)
    return out


def _too_deep(loc: Loc) -> SpecError:
    return SpecError.at(
        loc,
        "",
        "E001",
        f"the document is nested more than {MAX_DEPTH} levels deep",
        "a spec is a few levels of maps and lists",
    )


def parse(file: str, text: str) -> tuple[Doc, list[SpecError]]:
    """Parse one YAML (or JSON) document; syntax errors come back as SpecErrors."""
    doc = Doc(file, None)
    try:
        loader = _Composer(text)
        try:
            node = loader.get_single_node()
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        loc = Loc(file, mark.line + 1, mark.column + 1) if mark else Loc(file, 1, 1)
        return doc, [
            SpecError.at(loc, "", "E001", f"YAML syntax error: {exc.problem or exc}", str(exc.context or ""))
        ]
    except yaml.YAMLError as exc:
        return doc, [SpecError.at(Loc(file, 1, 1), "", "E001", f"YAML error: {exc}")]
    except RecursionError:  # the pure-Python composer recurses once per level (libyaml stops at 1000)
        return doc, [_too_deep(Loc(file, 1, 1))]
    if node is None:
        return doc, [SpecError.at(Loc(file, 1, 1), "", "E006", "the file is empty", "start it with `kind:`")]
    errors: list[SpecError] = []
    try:
        doc.data = _build(doc, node, (), errors, text.splitlines())
    except _TooDeep as exc:
        doc.data, doc.values, doc.keys = None, {}, {}
        return doc, [_too_deep(_mark(file, exc.node))]
    except _TooLarge:
        doc.data, doc.values, doc.keys = None, {}, {}
        return doc, [
            SpecError.at(
                Loc(file, 1, 1),
                "",
                "E007",
                f"the document expands to more than {MAX_NODES} nodes",
                "aliases that multiply (an alias bomb) are refused",
            )
        ]
    return doc, errors
