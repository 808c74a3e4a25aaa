"""Files the specs name outside specs/ and scenarios/: what levels provide, what agents' arguments name.

They are inputs too: a changed tool launcher, guide or scripted agent's script must change
the jobs' hashes, so a resumed matrix reruns them. Only the project and agent specs are read
here, by the compiler's own YAML reader, leniently (their errors are the validate stage's). What a spec names but the disk
lacks is recorded as absent, so the compiler refuses it before any trial runs.
"""

from __future__ import annotations

import hashlib
import posixpath
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compiler.hostfiles import digest as host_digest
from compiler.hostfiles import named_host_files
from compiler.yamlio import parse

NOT_PROVIDED = (".git", ".nox", ".venv", "generated", "runs", "scenarios")
MAX_PROVIDED = 20_000
"""Files hashed per provided folder (a guard against a level that links something huge)."""
AGENT_DIR = "specs/agents"
"""An agent argument naming a file is project-relative, or relative to this folder (as the runner reads it)."""
LEVEL_PATHS = ("files", "home_files", "links")
OPTION_DIRS = ("skill_dir", "wiki_dir")
"""Folders a matrix's `options:` name (project-relative guide and knowledge folders)."""


@dataclass
class Provided:
    """Hashes of the files specs name, the agent argument files' bytes, and what is missing."""

    hashes: dict[str, str] = field(default_factory=dict)
    agent_files: dict[str, bytes] = field(default_factory=dict)
    """Project-relative path -> bytes of every file an agent argument names (a script)."""
    absent: set[str] = field(default_factory=set)
    """Project-relative paths a level names that do not exist."""
    host: dict[str, str | None] = field(default_factory=dict)
    """Host files command agents run by absolute path -> sha256, `directory`, or None: missing."""
    outside: dict[str, str] = field(default_factory=dict)
    """Project-relative paths specs name that are links out of the project -> where they lead."""


def files_under(base: Path) -> list[Path]:
    """Every file below a folder, sorted (no __pycache__)."""
    return sorted(p for p in base.rglob("*") if p.is_file() and "__pycache__" not in p.parts)


def agent_file_candidates(value: str) -> list[str]:
    """Where an agent argument naming a file may be, project-relative, in the runner's order."""
    return [posixpath.normpath(value), posixpath.normpath(posixpath.join(AGENT_DIR, value))]


def _agent_args(root: Path, top: Path, args: dict[str, Any], out: Provided) -> None:
    for value in args.values():
        if not isinstance(value, str) or not value or len(value) > 4096 or value.startswith("/"):
            continue
        for rel in agent_file_candidates(value):
            try:
                target = (root / rel).resolve()
                if target.is_file() and not target.is_relative_to(top):
                    out.outside[rel] = str(target)  # refused (E211), never read
                    break
                if target.is_file():
                    data = target.read_bytes()
                    out.agent_files[rel] = data
                    out.hashes[rel] = hashlib.sha256(data).hexdigest()
                    break
            except (OSError, ValueError):
                continue  # not a path (a model name, a flag): nothing to hash


def _level_names(doc: dict[str, Any]) -> list[str]:
    named: list[str] = []
    for levels in doc["factors"].values():
        for level in (levels or {}).values() if isinstance(levels, dict) else ():
            if not isinstance(level, dict):
                continue
            named += [p for p in level.get("path") or [] if isinstance(p, str)]
            for key in LEVEL_PATHS:
                if isinstance(level.get(key), dict):
                    named += [p for p in level[key].values() if isinstance(p, str)]
            if isinstance(level.get("skill_dir"), str):
                named.append(level["skill_dir"])
    return named


def _level_files(root: Path, top: Path, spec: str, named: list[str], out: Provided) -> None:
    base = posixpath.dirname(spec)
    for name in named:
        rel = posixpath.normpath(posixpath.join(base, name))
        if name.startswith("/") or rel == ".." or rel.startswith("../"):
            continue  # refused by the validate stage (E210/E211)
        try:
            target = (root / rel).resolve()
        except (OSError, ValueError):
            continue
        if not target.exists():
            out.absent.add(rel)
            continue
        if not target.is_relative_to(top):
            out.outside[rel] = str(target)  # a link out of the project: refused (E211), never read
            continue
        # The project root itself, or its build and run folders, are no provision to hash.
        if target == top or target.relative_to(top).parts[0] in NOT_PROVIDED:
            continue
        for p in [target] if target.is_file() else files_under(target)[:MAX_PROVIDED]:
            out.hashes[p.relative_to(top).as_posix()] = hashlib.sha256(p.read_bytes()).hexdigest()


def provided(root: Path, specs: dict[str, bytes]) -> Provided:
    """What the project's levels and agents name, read from disk."""
    out = Provided()
    top = root.resolve()
    for rel, raw in specs.items():
        if not any(word in raw for word in (b"project", b"args", b"command", b"_dir")):
            continue
        try:
            doc = parse(rel, raw.decode("utf-8"))[0].data  # its errors are the validate stage's
        except UnicodeDecodeError:
            continue
        if not isinstance(doc, dict):
            continue
        if doc.get("kind") == "agent" and isinstance(doc.get("command"), str):
            for path in named_host_files(doc["command"]):
                out.host[path] = host_digest(path)
        if doc.get("kind") == "agent" and isinstance(doc.get("args"), dict):
            _agent_args(root, top, doc["args"], out)
        elif doc.get("kind") == "project" and isinstance(doc.get("factors"), dict):
            _level_files(root, top, rel, _level_names(doc), out)
        options = doc.get("options") if doc.get("kind") == "matrix" else (doc.get("defaults") or {})
        if isinstance(options, dict) and doc.get("kind") == "project":
            options = options.get("options")
        if isinstance(options, dict):
            _option_dirs(root, top, rel, options, out)
    return out


def _option_dirs(root: Path, top: Path, spec: str, options: dict[str, Any], out: Provided) -> None:
    """A matrix's guide and knowledge folders (`options.skill_dir`, `wiki_dir`) that are links out
    of the project (the runner reads them when a level uses one)."""
    for key in OPTION_DIRS:
        value = options.get(key)
        if not isinstance(value, str) or value.startswith("/"):
            continue
        rel = posixpath.normpath(posixpath.join(posixpath.dirname(spec), value))
        try:
            target = (root / rel).resolve()
        except (OSError, ValueError):
            continue
        if rel != ".." and not rel.startswith("../") and target.exists() and not target.is_relative_to(top):
            out.outside[rel] = str(target)
