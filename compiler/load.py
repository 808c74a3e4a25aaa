"""Stage 1, load: the only stage that reads. Finds every input, hashes it, parses specs.

`scan` reads bytes and hashes them (cheap: the unchanged-recompile check needs only
this); `parse` turns the spec files into `Doc`s with positions. Seed 000's
`scenario.json` is renamed to the YAML form here (camelCase keys to snake_case,
`kind: scenario` implied) so later stages see one shape.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from compiler.errors import Loc, SpecError
from compiler.hostfiles import read_host_files
from compiler.yamlio import Doc, Path_, parse, peek

SPEC_DIRS = ("specs",)
SCENARIO_DIR = "scenarios"
SCENARIO_FILES = ("scenario.yaml", "scenario.yml", "scenario.json")
TREE_DIRS = ("seed", "reference", "grader", "negatives", "negative")
"""Folders of a scenario whose files are inputs (hashed, checked to exist)."""

NOT_PROVIDED = (".git", ".nox", ".venv", "generated", "runs", SCENARIO_DIR)
MAX_PROVIDED = 20_000
"""Files hashed per provided folder (a guard against a level that links something huge)."""

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
    host: dict[str, str | None] = field(default_factory=dict)
    """Host files command agents name (absolute path -> sha256, `directory`, or None: missing)."""

    def under(self, folder: str) -> list[str]:
        """Input files below a folder, sorted."""
        return self.folders.get(folder, [])

    def fingerprint(self, salt: str = "") -> str:
        """One hash over every input path and content (and a salt such as the compiler's own hash)."""
        h = hashlib.sha256(salt.encode())
        for rel in sorted(self.hashes):
            h.update(f"{rel}\0{self.hashes[rel]}\n".encode())
        for path in sorted(self.host):
            h.update(f"{path}\0{self.host[path]}\n".encode())
        return h.hexdigest()


@dataclass
class Sources:
    """Parsed specs plus the raw inputs they came from."""

    inputs: Inputs
    docs: list[Doc] = field(default_factory=list)
    errors: list[SpecError] = field(default_factory=list)
    unparsed: list[str] = field(default_factory=list)
    """Likely ids of files that did not parse at all."""


def _files_under(base: Path) -> list[Path]:
    return sorted(p for p in base.rglob("*") if p.is_file() and "__pycache__" not in p.parts)


def _provided(root: Path, specs: dict[str, bytes]) -> dict[str, str]:
    """Hashes of the files the project's levels provide (PATH folders, files, links, skill dirs).

    They are inputs too: a changed tool launcher or guide must change the jobs' hashes, so a
    resumed matrix reruns them. Only the project spec is read here, leniently; its errors are
    reported by the validate stage.
    """
    out: dict[str, str] = {}
    top = root.resolve()
    for rel, raw in specs.items():
        if b"project" not in raw and b"args" not in raw:
            continue
        doc = peek(raw)
        if isinstance(doc, dict) and doc.get("kind") == "agent" and isinstance(doc.get("args"), dict):
            # Adapter arguments that name a project file (a scripted agent's script) are read by the
            # runner relative to the project root; their content is part of the agent.
            for value in doc["args"].values():
                if not isinstance(value, str) or not value or len(value) > 4096:
                    continue
                try:
                    target = (root / value).resolve()
                    if target.is_relative_to(top) and target.is_file():
                        out[target.relative_to(top).as_posix()] = hashlib.sha256(
                            target.read_bytes()
                        ).hexdigest()
                except (OSError, ValueError):
                    continue  # not a path (a model name, a flag): nothing to hash
            continue
        if (
            not isinstance(doc, dict)
            or doc.get("kind") != "project"
            or not isinstance(doc.get("factors"), dict)
        ):
            continue
        named: list[str] = []
        for levels in doc["factors"].values():
            for level in (levels or {}).values() if isinstance(levels, dict) else ():
                if not isinstance(level, dict):
                    continue
                named += [p for p in level.get("path") or [] if isinstance(p, str)]
                for key in ("files", "home_files", "links"):
                    if isinstance(level.get(key), dict):
                        named += [p for p in level[key].values() if isinstance(p, str)]
                if isinstance(level.get("skill_dir"), str):
                    named.append(level["skill_dir"])
        base = (root / rel).parent
        for name in named:
            try:
                target = (base / name).resolve()
            except (OSError, ValueError):
                continue
            # The project root itself, or its build and run folders, are no provision to hash.
            if (
                not target.is_relative_to(top)
                or target == top
                or target.relative_to(top).parts[0] in NOT_PROVIDED
            ):
                continue
            for p in (
                [target]
                if target.is_file()
                else (_files_under(target)[:MAX_PROVIDED] if target.is_dir() else [])
            ):
                out[p.relative_to(top).as_posix()] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def scan(root: Path) -> Inputs:
    """Read every input of the project under `root` (specs/ and scenarios/)."""
    data: dict[str, bytes] = {}
    spec_files: list[str] = []
    for sub in SPEC_DIRS:
        base = root / sub
        if base.is_dir():
            for p in _files_under(base):
                if p.suffix in (".yaml", ".yml"):
                    rel = p.relative_to(root).as_posix()
                    spec_files.append(rel)
                    data[rel] = p.read_bytes()
    scenario_dirs: list[str] = []
    sroot = root / SCENARIO_DIR
    if sroot.is_dir():
        for d in sorted(p for p in sroot.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))):
            scenario_dirs.append(d.relative_to(root).as_posix())
            for p in _files_under(d):
                data[p.relative_to(root).as_posix()] = p.read_bytes()
    specs = {r: data[r] for r in spec_files}
    inputs = inputs_of(root, data, _provided(root, specs))
    inputs.host.update(read_host_files(specs))
    return inputs


def inputs_of(root: Path, data: dict[str, bytes], provided: dict[str, str] | None = None) -> Inputs:
    """Inputs from file contents already in memory (what `scan` read, or a test's dict)."""
    hashes = {rel: hashlib.sha256(b).hexdigest() for rel, b in data.items()}
    for rel, digest in (provided or {}).items():
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
                for r in data
                if r.startswith(f"{SCENARIO_DIR}/")
                and r.count("/") >= 2
                and not r.split("/")[1].startswith((".", "_"))
            }
        )
    )
    return Inputs(root, data, hashes, scen, specs, folders)


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


def parse_sources(inputs: Inputs) -> Sources:
    """Parse every spec file and scenario file; syntax errors are collected, not raised."""
    src = Sources(inputs)
    files = list(inputs.spec_files)
    for d in inputs.scenario_dirs:
        present = [f"{d}/{name}" for name in SCENARIO_FILES if f"{d}/{name}" in inputs.data]
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
            continue
        files.append(present[0])
    for rel in files:
        try:
            text = inputs.data[rel].decode("utf-8")
        except UnicodeDecodeError as exc:
            src.errors.append(SpecError.at(Loc(rel, 1, 1), "", "E001", f"not UTF-8: {exc}"))
            continue
        doc, errors = parse(rel, text)
        src.errors.extend(errors)
        if doc.data is None:
            # Its id is unknown; the file name is the best guess (references to it are not re-reported).
            src.unparsed.append(
                rel.split("/")[-2]
                if rel.startswith(f"{SCENARIO_DIR}/")
                else rel.rsplit("/", 1)[-1].split(".")[0]
            )
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
