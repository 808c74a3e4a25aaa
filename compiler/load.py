"""Stage 1, load: the only stage that reads. Finds every input, hashes it, parses specs.

`scan` reads bytes and hashes them (cheap: the unchanged-recompile check needs only
this); `parse` turns the spec files into `Doc`s with positions. Seed 000's
`scenario.json` is renamed to the YAML form here (camelCase keys to snake_case,
`kind: scenario` implied) so later stages see one shape.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from compiler.errors import Loc, SpecError
from compiler.provided import Provided, files_under, provided
from compiler.yamlio import Doc, Path_, parse

SPEC_DIRS = ("specs",)
SCENARIO_DIR = "scenarios"
SCENARIO_FILES = ("scenario.yaml", "scenario.yml", "scenario.json")
TREE_DIRS = ("seed", "reference", "grader", "negatives", "negative")
"""Folders of a scenario whose files are inputs (hashed, checked to exist)."""

CAMEL = {
    "runtimeOnly": "runtime_only",
    "stabilityRisk": "stability_risk",
    "referenceNote": "reference_note",
    "notableExits": "notable_exits",
    "forbidWords": "forbid_words",
    "stateSetup": "state_setup",
    "freshRepo": "fresh_repo",
}
"""Seed 000's camelCase keys of scenario.json and their spec-language names."""


@dataclass(frozen=True)
class Inputs:
    """Every input file of a project: project-relative path -> bytes, and their hashes."""

    root: Path
    data: dict[str, bytes]
    hashes: dict[str, str]
    scenario_dirs: tuple[str, ...]
    spec_files: tuple[str, ...]

    folders: dict[str, list[str]] = field(default_factory=dict)
    """Folder -> every input file below it, sorted (built by `scan`)."""
    agent_files: dict[str, bytes] = field(default_factory=dict)
    """Files agents' arguments name (a scripted agent's script), project-relative."""
    absent: frozenset[str] = frozenset()
    """Paths a level names that do not exist (an error, E235)."""
    host: dict[str, str | None] = field(default_factory=dict)
    """Host files command agents name (absolute path -> sha256, `directory`, or None: missing)."""
    outside: dict[str, str] = field(default_factory=dict)
    """Project paths that are links to places outside the project -> where they lead (never read)."""

    def under(self, folder: str) -> list[str]:
        """Input files below a folder, sorted."""
        return self.folders.get(folder, [])

    def fingerprint(self, salt: str = "") -> str:
        """One hash over every input path and content (and a salt such as the compiler's own hash)."""
        h = hashlib.sha256(salt.encode())
        for rel in sorted(self.hashes):
            h.update(f"{rel}\0{self.hashes[rel]}\n".encode())
        for rel in sorted(self.absent):
            h.update(f"{rel}\0absent\n".encode())
        for path in sorted(self.host):
            h.update(f"{path}\0{self.host[path]}\n".encode())
        for rel in sorted(self.outside):
            h.update(f"{rel}\0outside {self.outside[rel]}\n".encode())
        return h.hexdigest()


@dataclass
class Sources:
    """Parsed specs plus the raw inputs they came from."""

    inputs: Inputs
    docs: list[Doc] = field(default_factory=list)
    errors: list[SpecError] = field(default_factory=list)
    unparsed: list[str] = field(default_factory=list)
    """Spec files that did not parse at all, and scenario folders without a readable scenario file:
    they exist, and `compiler.declared` names them from their paths."""
    adapters: tuple[str, ...] | None = None
    """The built-in adapters' short names (`builtin_adapters`); None: names are not checked."""


def scan(root: Path) -> Inputs:
    """Read every input of the project under `root` (specs/ and scenarios/)."""
    data: dict[str, bytes] = {}
    spec_files: list[str] = []
    for sub in SPEC_DIRS:
        base = root / sub
        if base.is_dir():
            for p in files_under(base):
                if p.suffix in (".yaml", ".yml"):
                    rel = p.relative_to(root).as_posix()
                    spec_files.append(rel)
                    data[rel] = p.read_bytes()
    outside: dict[str, str] = {}
    sroot = root / SCENARIO_DIR
    if sroot.is_dir():
        for d in sorted(p for p in sroot.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))):
            # Below d only a file can be a link (files_under enters no linked folder).
            for p in [d] if _leaves(root, d) else files_under(d):
                rel = p.relative_to(root).as_posix()
                if p == d or (p.is_symlink() and _leaves(root, p)):  # what it leads to is no input
                    outside[rel] = str(p.resolve())
                else:
                    data[rel] = p.read_bytes()
    named = provided(root, {r: data[r] for r in spec_files})
    return inputs_of(root, data, named, outside)


def _leaves(root: Path, p: Path) -> bool:
    """Whether a path below the project root resolves to a place outside it (through a link)."""
    return not p.resolve().is_relative_to(root.resolve())


def inputs_of(
    root: Path, data: dict[str, bytes], named: Provided | None = None, outside: dict[str, str] | None = None
) -> Inputs:
    """Inputs from file contents already in memory (what `scan` read, or a test's dict); `outside`:
    links in the scenarios that lead out of the project (a seed's link is copied as a link)."""
    named = named or Provided()
    outside = {**(outside or {}), **named.outside}
    hashes = {rel: hashlib.sha256(b).hexdigest() for rel, b in data.items()}
    for rel, target in outside.items():
        if rel.startswith(f"{SCENARIO_DIR}/") and rel.count("/") >= 2:  # a file of a scenario
            hashes[rel] = hashlib.sha256(f"link to {target}".encode()).hexdigest()
    for rel, digest in named.hashes.items():
        hashes.setdefault(rel, digest)
    folders: dict[str, list[str]] = {}
    for rel in sorted(hashes):
        parts = rel.split("/")
        for depth in range(1, len(parts)):
            folders.setdefault("/".join(parts[:depth]), []).append(rel)
    specs = tuple(sorted(r for r in data if r.startswith("specs/") and r.endswith((".yaml", ".yml"))))
    scen = tuple(
        sorted(
            {
                "/".join(r.split("/")[:2])
                for r in hashes
                if r.startswith(f"{SCENARIO_DIR}/")
                and r.count("/") >= 2
                and not r.split("/")[1].startswith((".", "_"))
            }
        )
    )
    return Inputs(
        root,
        data,
        hashes,
        scen,
        specs,
        folders,
        dict(named.agent_files),
        frozenset(named.absent),
        dict(named.host),
        outside,
    )


def _rename(doc: Doc, path: Path_, mapping: dict[str, str]) -> None:
    """Rename keys of the map at `path` in place, moving their positions along."""
    node = doc.data
    for part in path:
        node = node[part]
    if not isinstance(node, dict):
        return
    for old, new in mapping.items():
        if old in node and new not in node:
            node[new] = node.pop(old)
            for table in (doc.values, doc.keys):
                n = len(path) + 1
                for p in [p for p in table if p[: len(path)] == path and len(p) >= n and p[len(path)] == old]:
                    table[(*path, new, *p[n:])] = table.pop(p)


def not_utf8(rel: str, data: bytes, exc: UnicodeDecodeError) -> SpecError:
    """Where the first byte that is not UTF-8 sits: its line and column (in characters)."""
    start = data.rfind(b"\n", 0, exc.start) + 1
    line = data.count(b"\n", 0, exc.start) + 1
    col = len(data[start : exc.start].decode("utf-8", "replace")) + 1
    bad = data[exc.start : exc.end].hex(" ")
    return SpecError.at(
        Loc(rel, line, col), "", "E001", f"not UTF-8: byte(s) {bad} ({exc.reason})", "save the file as UTF-8"
    )


def _link_out(rel: str, target: str) -> SpecError:
    """A scenario folder or file that is a link to a place outside the project (E211)."""
    return SpecError.at(
        Loc(rel, 1, 1),
        "",
        "E211",
        f"'{rel}' is a link to {target}, outside the project",
        "a scenario lives inside the project: copy it in instead of linking to it",
    )


@cache
def builtin_adapters() -> tuple[str, ...] | None:
    """The built-in adapters' short names, as the installed `adapters` package lists them in its
    `__all__`: read from its source, found and never imported (the compiler runs no run-time
    code). None when no adapters package is installed beside the compiler."""
    spec = importlib.util.find_spec("adapters")
    if spec is None or spec.origin is None:
        return None
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["__all__"]:
            return tuple(ast.literal_eval(node.value))
    return None


def parse_sources(inputs: Inputs) -> Sources:
    """Parse every spec file and scenario file; syntax errors are collected, not raised."""
    src = Sources(inputs, adapters=builtin_adapters())
    files = list(inputs.spec_files)
    for rel, target in sorted(inputs.outside.items()):
        if rel.startswith(f"{SCENARIO_DIR}/") and (rel.count("/") == 1 or rel.endswith(SCENARIO_FILES)):
            src.errors.append(_link_out(rel, target))
            src.unparsed.append(rel)  # it exists: references to it are not errors again
    for d in inputs.scenario_dirs:
        present = [f"{d}/{name}" for name in SCENARIO_FILES if f"{d}/{name}" in inputs.data]
        if not present and any(f"{d}/{name}" in inputs.outside for name in SCENARIO_FILES):
            continue
        if not present:
            src.errors.append(
                SpecError.at(
                    Loc(d, 1, 1),
                    "",
                    "E201",
                    "scenario folder has no scenario.yaml",
                    "add scenario.yaml (or seed 000's scenario.json), or run `assay new scenario`",
                )
            )
            src.unparsed.append(d)  # a scenario folder: references to it are not errors again
            continue
        files.append(present[0])
    for rel in files:
        try:
            text = inputs.data[rel].decode("utf-8")
        except UnicodeDecodeError as exc:
            src.errors.append(not_utf8(rel, inputs.data[rel], exc))
            src.unparsed.append(rel)
            continue
        doc, errors = parse(rel, text)
        src.errors.extend(errors)
        if doc.data is None:
            src.unparsed.append(rel)  # its id is unknown: references to it are not re-reported
            continue
        if rel.endswith(".json") and isinstance(doc.data, dict):
            doc.data.setdefault("kind", "scenario")
            _rename(doc, (), CAMEL)
            for i, _ in enumerate(doc.data.get("steps") or []):
                _rename(doc, ("steps", i), CAMEL)
            if "prompt" not in doc.data:
                doc.data["prompt"] = "prompt.md"
        src.docs.append(doc)
    return src
