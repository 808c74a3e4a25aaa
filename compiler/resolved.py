"""In-memory values between stages: validated specs with the documents they came from."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from compiler.agentargs import Script
from compiler.contract import AgentSpec, Limits, Options, ScenarioJob
from compiler.declared import Declared
from compiler.specs import CheckKindDoc, MatrixDoc, ProjectDoc
from compiler.yamlio import Doc


@dataclass(frozen=True)
class ScenarioIn:
    """A validated scenario, already in its job form, and where its fields came from."""

    job: ScenarioJob
    doc: Doc
    check_paths: tuple[tuple[str | int, ...], ...]
    """Key path of each check in `doc` (same order as job.checks)."""
    files: list[str] = field(default_factory=list)
    """Every input file of the scenario's folder (their hashes go into the job hash)."""
    prompt_file: str | None = None
    """Project-relative prompt file (for positions of forbidden words)."""


@dataclass(frozen=True)
class MatrixIn:
    """A validated matrix with project defaults and its extends chain merged in."""

    spec: MatrixDoc
    doc: Doc
    limits: Limits
    options: Options


@dataclass(frozen=True)
class Validated:
    """Everything the expand stage needs, all checked."""

    project: ProjectDoc
    project_doc: Doc
    levels: dict[str, dict[str, dict[str, Any]]]
    """factor -> level -> provisions (after the level's extends), factor and level order kept."""
    agents: dict[str, AgentSpec]
    agent_docs: dict[str, Doc]
    agent_flags: dict[str, tuple[bool, str]]
    """agent id -> (runnable, reason)."""
    kinds: dict[str, CheckKindDoc]
    kind_docs: dict[str, Doc]
    matrices: dict[str, MatrixIn]
    scenarios: dict[str, ScenarioIn]
    fingerprint: str
    declared: Declared = field(default_factory=Declared)
    """Every name a spec file declares, valid or not: a reference to one that is not valid (it has
    errors of its own) is not an error again."""
    input_hashes: dict[str, str] = field(default_factory=dict)
    input_folders: dict[str, list[str]] = field(default_factory=dict)
    scripts: dict[str, Script] = field(default_factory=dict)
    """Scripted agents by id: which scenarios their scripts have steps for."""
    absent: frozenset[str] = frozenset()
    """Paths a level names that do not exist."""
    outside: dict[str, str] = field(default_factory=dict)
    """Project paths that are links out of the project -> where they lead."""

    def inputs_under(self, folder: str) -> list[str]:
        """Input files below a project-relative folder, sorted."""
        return self.input_folders.get(folder.rstrip("/"), [])
