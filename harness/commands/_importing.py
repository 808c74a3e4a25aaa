"""`assay import`: another harness's tasks in, scenarios that validate (or refusals with reasons) out.

    read each task -> write it to a staging folder -> build its environment -> run its solution in
    the sandbox (the reference) -> move it into scenarios/ -> compile -> validate -> keep, or refuse

A task is refused, with its reason in the import report, whenever a step fails: its environment
cannot be reproduced, its solution fails offline, the compiler or `assay validate` rejects the
result. Nothing half-imported stays: a refused task's folder is removed, and an import that does
not finish (Ctrl-C, SIGTERM, a full disk, a bug) takes back every path it claimed in its `Undo`
journal (`harness.importers.undo`). The import writes its own matrix (the oracle and the no-op
agent in the control cell, the imported scenarios by tag) and never edits another spec; agents
named `oracle` / `noop` are written only when missing.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

from harness.importers import harbor, terminal_bench, write
from harness.importers.reference import run_build, run_solution
from harness.importers.task import Task, slug, task_id
from harness.importers.undo import Undo
from harness.sandbox.scenario import environment_of

READERS: dict[str, ModuleType] = {"terminal-bench": terminal_bench, "harbor": harbor}
STAGING = Path(".cache") / "import"
REPORTS = Path("imports")


@dataclass
class Outcome:
    """What became of one task."""

    task: str
    scenario: str
    imported: bool = False
    reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class Importer:
    """One `assay import` run over a dataset."""

    project: Path
    fmt: str
    source: Path
    name: str
    force: bool = False
    jobs: int = 2
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    stop: threading.Event = field(default_factory=threading.Event)
    """Set when the import is stopping: running solutions and build steps end early."""
    undo: Undo = field(init=False)
    """Every path the import writes in the project, claimed first: put back unless it finishes."""

    def __post_init__(self) -> None:
        self.undo = Undo(self.project, self.project / STAGING / f"{self.name}.undo")

    @property
    def reader(self) -> ModuleType:
        return READERS[self.fmt]

    @property
    def staging(self) -> Path:
        """Where tasks are written and reproduced before they move into scenarios/."""
        return self.project / STAGING / self.name

    def read(self) -> list[Task]:
        """Every task of the dataset, read; a task whose files cannot be read, one with a link out
        of its folder, or two whose names come to one scenario id, carry their refusals."""
        folders = self.reader.dataset_tasks(self.source)
        single = len(folders) == 1 and folders[0] == self.source
        tasks: dict[str, Task] = {}
        for folder in folders:
            tid = task_id(folder, "" if single else self.name)
            where = str(folder.relative_to(self.source.parent))
            if tid in tasks:  # `a b` and `a-b`: neither is imported under the other's name
                tasks[tid].refuse(f"{where} comes to the same scenario id {tid}")
                self.outcomes[tid].reasons.append(f"also the id of {where}, which is not imported")
                continue
            task = self._read_one(folder, tid)
            for link in links_out(folder):
                task.refuse(f"{link} links outside the task: its target is never read")
            self.outcomes[tid] = Outcome(task=where, scenario=tid)
            tasks[tid] = task
        return list(tasks.values())

    def _read_one(self, folder: Path, tid: str) -> Task:
        """One task; files of a shape the reader does not expect are a refusal, never a crash."""
        try:
            task: Task = self.reader.read(folder, task_id=tid)
        except (TypeError, AttributeError, KeyError, ValueError, RecursionError, OSError) as exc:
            task = Task(format=self.fmt, name=folder.name, id=tid, root=folder, context=folder)
            task.refuse(f"its task files cannot be read ({type(exc).__name__}: {str(exc)[:200]})")
        return task

    def refuse(self, sid: str, reason: str) -> None:
        """The task's scenario goes; one it replaced (`--force`) comes back, as it was."""
        outcome = self.outcomes[sid]
        outcome.imported = False
        outcome.reasons.append(reason)
        folder = self.project / "scenarios" / sid
        if self.undo.claimed(folder):
            self.undo.restore(folder)
        else:
            shutil.rmtree(folder, ignore_errors=True)

    def stage(self, task: Task, staging: Path) -> Path | None:
        """Write the task's scenario folder into staging; None (and the reasons) when refused."""
        out = self.outcomes[task.id]
        if task.refusals:
            out.reasons += task.refusals
            return None
        if (self.project / "scenarios" / task.id).exists() and not self.force:
            out.reasons.append(f"scenarios/{task.id}/ exists (--force replaces it)")
            return None
        dest = staging / task.id
        shutil.rmtree(dest, ignore_errors=True)
        source = f"{self.fmt} task {out.task}" + (f" at {self.commit}" if self.commit else "")
        write.write(
            task,
            dest,
            family=self.name,
            tags=[self.fmt, self.name],
            source=source,
            kind=pytest_kind(self.project),
        )
        out.notes = list(task.notes)
        if task.refusals:
            out.reasons += task.refusals
            return None
        return dest

    def _git(self, *args: str) -> str | None:
        """A git command's output in the dataset's folder; None outside a git checkout."""
        try:
            done = subprocess.run(
                ["git", "-C", str(self.source), *args], capture_output=True, text=True, timeout=60
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.rstrip("\n") if done.returncode == 0 else None

    @functools.cached_property
    def commit(self) -> str | None:
        """The dataset's git commit (all of its hash), when it is a git checkout."""
        return self._git("rev-parse", "HEAD") or None

    @functools.cached_property
    def repo_path(self) -> str | None:
        """Where the dataset's folder is inside its repository (`datasets/evoeval`; '' at its top)."""
        prefix = self._git("rev-parse", "--show-prefix") if self.commit else None
        return prefix.rstrip("/") if prefix is not None else None

    @functools.cached_property
    def local_changes(self) -> list[str] | None:
        """How the dataset's files differ from its commit (`deleted tasks/a/tests/test_x.py`: edited,
        added, removed); None outside a git checkout. A hand-edited dataset, or one missing files,
        is then never reported as the commit's."""
        if not self.commit:
            return None
        status = self._git("status", "--porcelain", "--untracked-files=all", "--", ".")
        if status is None:
            return None
        words = {"M": "modified", "D": "deleted", "A": "added", "?": "added", "R": "renamed", "T": "modified"}
        out = []
        for line in status.splitlines():
            code, path = line[:2].strip() or "M", line[3:]
            out.append(f"{words.get(code[0], 'changed')} {path}")
        return out

    def reference(self, task: Task, folder: Path, scenario: Any) -> None:
        """Build the environment, run the image's build steps on the seed and mounts, and run the
        solution into folder/reference (raises with the reason)."""
        assert task.solution is not None
        env = environment_of(scenario, self.project)
        if task.build.steps:
            run_build(
                scenario,
                self.project,
                task.build.steps,
                environment=env,
                timeout_s=task.timeout_s or 600.0,
                cancel=self.stop,
            )
        ref = run_solution(
            scenario,
            self.project,
            task.solution_dir or task.solution,
            environment=env,
            extra_env=task.solution_env,
            timeout_s=task.timeout_s or 600.0,
            cancel=self.stop,
        )
        try:
            shutil.move(str(ref.workspace), folder / "reference")
            for where, overlay in ref.mounts.items():
                shutil.move(str(overlay), folder / write.mount_reference(where))
            write.set_mount_references(folder, sorted(ref.mounts))
            write.fill(folder / "reference")
        finally:
            shutil.rmtree(ref.workspace.parent, ignore_errors=True)


def links_out(folder: Path) -> list[str]:
    """Links under `folder` whose target is outside it (a host file, another scenario), relative."""
    inside = folder.resolve()
    found = []
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in [*dirnames, *filenames]:
            path = Path(dirpath) / name
            if path.is_symlink() and not path.resolve().is_relative_to(inside):
                found.append(path.relative_to(folder).as_posix())
    return sorted(found)


IMPORT_HEADER = "# Written by `assay import`"
"""The first line of a matrix the import wrote: only such a matrix is ever replaced."""


def own_matrix(project: Path, name: str) -> Path | None:
    """The project's own matrix file an import of `name` would write over, if there is one."""
    matrix = project / "specs" / "matrices" / f"{name}.yaml"
    try:
        first = matrix.read_text(encoding="utf-8").split("\n", 1)[0]
    except (OSError, UnicodeDecodeError):
        return matrix if matrix.exists() or matrix.is_symlink() else None
    return None if first.startswith(IMPORT_HEADER) else matrix


def spec_docs(project: Path) -> list[dict[str, Any]]:
    """The project's spec documents, read leniently (the compiler reports what does not parse)."""
    docs = []
    for path in sorted((project / "specs").rglob("*.y*ml")):
        try:
            doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError):
            continue
        if isinstance(doc, dict):
            docs.append(doc)
    return docs


def agent_ids(project: Path) -> dict[str, str]:
    """adapter -> the id of an agent spec that uses it (oracle / noop), from specs/."""
    found: dict[str, str] = {}
    for doc in spec_docs(project):
        if doc.get("kind") == "agent" and doc.get("adapter") in ("oracle", "noop"):
            found.setdefault(str(doc["adapter"]), str(doc.get("id")))
    return found


def pytest_kind(project: Path) -> str:
    """The kind name of the built-in pytest check in this project (`builtin:pytest` where a
    project kind of its own is called `pytest`)."""
    own = {doc.get("id") for doc in spec_docs(project) if doc.get("kind") == "check-kind"}
    return "builtin:pytest" if "pytest" in own else "pytest"


def write_specs(
    project: Path, name: str, control: str, timeout_s: float, *, claim: Callable[[Path], Path]
) -> Path:
    """The import's matrix (and the oracle / no-op agents if the project has none); returns the
    matrix file. Each file is `claim`ed before it is written (`Undo.claim`)."""
    agents = agent_ids(project)
    for adapter in ("oracle", "noop"):
        if adapter not in agents:
            path = project / "specs" / "agents" / f"{adapter}.yaml"
            if not path.exists():
                claim(path).parent.mkdir(parents=True, exist_ok=True)
                sanity = "pass" if adapter == "oracle" else "fail"
                path.write_text(
                    f"kind: agent\nid: {adapter}\nadapter: {adapter}\nsanity: {sanity}\n", encoding="utf-8"
                )
            agents[adapter] = adapter
    matrix = claim(project / "specs" / "matrices" / f"{name}.yaml")
    matrix.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        "kind": "matrix",
        "id": name,
        "description": f"scenarios imported by `assay import` ({name}): the oracle must pass, the no-op agent fail",
        "agents": [agents["oracle"], agents["noop"]],
        "cells": [control],
        "scenarios": {"tags": [name]},
        "trials": 1,
        "limits": {"timeout_s": timeout_s},
    }
    matrix.write_text(
        f"{IMPORT_HEADER}; edit freely (a later import of the same dataset replaces it).\n"
        + yaml.safe_dump(doc, sort_keys=False),
        encoding="utf-8",
    )
    return matrix


def report(imp: Importer, started: float, *, write: bool = True) -> dict[str, Any]:
    """The import report as JSON (also written as imports/<name>.json and .md, unless `write` is
    False: an import that brought nothing in leaves an earlier import's report as it was)."""
    outs = sorted(imp.outcomes.values(), key=lambda o: o.scenario)
    data: dict[str, Any] = {
        "format": imp.fmt,
        "source": str(imp.source),
        "commit": imp.commit,
        "repo_path": imp.repo_path,
        "local_changes": imp.local_changes,
        "name": imp.name,
        "tasks": len(outs),
        "imported": [o.scenario for o in outs if o.imported],
        "refused": {o.scenario: {"task": o.task, "reasons": o.reasons} for o in outs if not o.imported},
        "notes": {o.scenario: o.notes for o in outs if o.notes and o.imported},
        "seconds": round(time.time() - started, 1),
    }
    if not write:
        return data
    folder = imp.project / REPORTS
    imp.undo.claim(folder / f"{imp.name}.json")
    imp.undo.claim(folder / f"{imp.name}.md")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{imp.name}.json").write_text(
        json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8"
    )
    lines = [
        f"# Import of {imp.fmt} tasks: {imp.name}",
        "",
        f"Source: `{imp.source}`" + (f" at commit `{data['commit']}`" if data["commit"] else ""),
        *(
            [
                f"Folder in its repository: `{data['repo_path'] or '.'}`; "
                + (
                    f"**with local changes** ({len(changes)}, `git status`): "
                    + ", ".join(f"`{c}`" for c in changes[:10])
                    + (", ..." if len(changes) > 10 else "")
                    if (changes := data["local_changes"] or [])
                    else "no local changes"
                )
                + "."
            ]
            if data["commit"]
            else []
        ),
        f"Tasks: {len(outs)}; imported {len(data['imported'])}; refused {len(data['refused'])}.",
        f"Matrix: `specs/matrices/{imp.name}.yaml` (`assay matrix {imp.name}`).",
        "",
        "## Imported",
        "",
        *[f"- `{s}`" for s in data["imported"]],
        "",
        "## Refused",
        "",
        *[f"- `{s}` ({r['task']}): {'; '.join(r['reasons'])}" for s, r in data["refused"].items()],
        "",
    ]
    (folder / f"{imp.name}.md").write_text("\n".join(lines), encoding="utf-8")
    return data


def parallel(items: list[Any], fn: Callable[[Any], None], jobs: int, *, stop: threading.Event) -> None:
    """fn over items, `jobs` at once. When one raises or the import is interrupted, items not
    started are dropped and `stop` is set, so that running ones end early instead of running on."""
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        try:
            list(pool.map(fn, items))
        except BaseException:
            stop.set()
            raise


def default_name(fmt: str, source: Path) -> str:
    """The dataset's folder name (a task's own, prefixed with its dataset's when it is only a number)."""
    reader = READERS[fmt]
    if reader.is_task(source):
        own = slug(source.name)
        return slug(f"{source.parent.name}-{own}") if own.isdigit() else own
    return (
        slug(source.name)
        if source.name not in ("datasets", "tasks", ".")
        else slug(source.resolve().parent.name)
    )


def stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
