"""Writing a read task as a scenario folder (the task's files are copied, never edited).

scenario.yaml   the scenario: workdir, mounts, environment, env, limits, one pytest check, meta
prompt.md       the instruction, Jinja syntax escaped (prompts are templates)
seed/           what the image has under its working directory
mounts/<name>/  what it has in another top-level folder (shown there, writable as in the image)
tests/          the hidden tests, shown at /tests to the checks only
solution/       the task's solution script(s), kept for provenance (the reference is made from them)
"""

from __future__ import annotations

import os
import re
import shutil
import stat
from pathlib import Path
from typing import Any

import yaml

from compiler.contract import Environment, ScenarioJob, ScenarioMount, within
from harness.importers.scripts import TEST_DIR
from harness.importers.task import Task, check_places, mount_root, placed_files, requirements

PLACEHOLDER = ".gitkeep"
RAW_OPEN, RAW_CLOSE = "{% raw %}", "{% endraw %}"


ENDRAW = re.compile(r"\{%[-+]?\s*endraw\s*[-+]?%\}")
"""What ends a raw block in Jinja's lexer, whitespace control and spacing included (`{%- endraw %}`)."""


def escape_template(text: str) -> str:
    """The text as a Jinja template that renders to itself: one raw block, and whatever would end
    it early printed by an expression between two."""
    if not any(mark in text for mark in ("{{", "{%", "{#")):
        return text
    inner = ENDRAW.sub(lambda m: RAW_CLOSE + "{{ " + repr(m.group(0)) + " }}" + RAW_OPEN, text)
    return RAW_OPEN + inner + RAW_CLOSE


def _copy_file(src: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src, dest)


def fill(folder: Path) -> None:
    """Empty folders get a placeholder: a scenario's trees are made of files."""
    for dirpath, dirnames, filenames in os.walk(folder):
        if not dirnames and not filenames:
            (Path(dirpath) / PLACEHOLDER).write_text("", encoding="utf-8")


def _mount_name(path: str) -> str:
    return path.strip("/").replace("/", "-") or "root"


def mount_reference(path: str) -> str:
    """Scenario-relative folder of a writable mount's reference overlay."""
    return f"reference-mounts/{_mount_name(path)}"


def set_mount_references(folder: Path, paths: list[str]) -> None:
    """Name the reference overlays of the given mounts in the scenario.yaml written in folder."""
    if not paths:
        return
    file = folder / "scenario.yaml"
    text = file.read_text(encoding="utf-8")
    head = "".join(line for line in text.splitlines(keepends=True) if line.startswith("#"))
    doc = yaml.safe_load(text)
    for m in doc.get("mounts") or []:
        if m["path"] in paths:
            m["reference"] = mount_reference(m["path"])
    file.write_text(
        head + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=100), encoding="utf-8"
    )


def files(task: Task, dest: Path) -> list[str]:
    """Write seed/ and mounts/ from the image's files; return the mount paths it made."""
    placed = placed_files(task)
    check_places(task, placed)
    seed = dest / "seed"
    seed.mkdir(parents=True)
    mounts: set[str] = set()
    for f in placed:
        if within(f.dest, task.workdir):
            target = seed / os.path.relpath(f.dest, task.workdir)
        else:
            root = mount_root(f.dest)
            mounts.add(root)
            target = dest / "mounts" / _mount_name(root) / os.path.relpath(f.dest, root)
        _copy_file(f.src, target)
    for d in task.build.dirs:
        if within(d, task.workdir):
            (seed / os.path.relpath(d, task.workdir)).mkdir(parents=True, exist_ok=True)
        elif not any(within(d, r) for r in ("/tmp", "/var", "/root", "/home")):
            mounts.add(mount_root(d))
            (dest / "mounts" / _mount_name(mount_root(d)) / os.path.relpath(d, mount_root(d))).mkdir(
                parents=True, exist_ok=True
            )
    for path, mode in task.build.modes.items():
        if within(path, task.workdir):
            target = seed / os.path.relpath(path, task.workdir)
            if target.is_file():
                target.chmod(stat.S_IMODE(mode))
    fill(seed)
    if (dest / "mounts").is_dir():
        fill(dest / "mounts")
    return sorted(mounts)


def scenario_doc(
    task: Task, mounts: list[str], *, family: str, tags: list[str], source: str, kind: str = "pytest"
) -> dict[str, Any]:
    """The scenario.yaml of a task."""
    doc: dict[str, Any] = {
        "kind": "scenario",
        "id": task.id,
        "description": f"{task.format} task {task.name}",
        "family": family,
        "tags": tags,
        "source": source,
        "reference_note": f"the task's solution, run in the sandbox on a copy of the seed when imported ({task.solution.name if task.solution else '-'})",
        "prompt": "prompt.md",
        "workdir": task.workdir,
        "writable": ["**"],
    }
    doc["mounts"] = [{"path": m, "from": f"mounts/{_mount_name(m)}", "writable": True} for m in mounts] + [
        {"path": TEST_DIR, "from": "tests", "hidden": True}
    ]
    env: dict[str, Any] = {"pip": requirements(task)}
    if task.build.python:
        env = {"python": task.build.python, **env}
    apt = {*task.build.packages.apt, *task.tests.packages.apt, *task.solution_needs.apt}
    if apt:
        env["apt"] = sorted(apt)
    doc["environment"] = env
    if task.env:
        doc["env"] = dict(sorted(task.env.items()))
    limits = {
        k: v
        for k, v in (("timeout_s", task.timeout_s), ("cpus", task.cpus), ("memory_mb", task.memory_mb))
        if v
    }
    if limits:
        doc["limits"] = limits
    check: dict[str, Any] = {"id": "tests", "kind": kind, "tests": task.tests.tests}
    if task.tests.args:
        check["args"] = task.tests.args
    if task.tests.cwd:
        check["cwd"] = task.tests.cwd
    if task.tests.setup:
        check["setup"] = task.tests.setup
    extra_env = {**task.tests.env, **task.check_env}
    if extra_env:
        check["env"] = extra_env
    if task.check_timeout_s:
        check["timeout_s"] = task.check_timeout_s
    doc["checks"] = [check]
    meta: dict[str, Any] = {task.format.replace("-", "_"): task.meta}
    if task.notes:
        meta["import_notes"] = task.notes
    doc["meta"] = meta
    return doc


def write(task: Task, dest: Path, *, family: str, tags: list[str], source: str, kind: str = "pytest") -> None:
    """The scenario folder of a task (dest must not exist)."""
    dest.mkdir(parents=True)
    mounts = files(task, dest)
    (dest / "prompt.md").write_text(escape_template(task.instruction.rstrip("\n") + "\n"), encoding="utf-8")
    if task.tests_dir is not None:
        shutil.copytree(task.tests_dir, dest / "tests", symlinks=False)
    if task.solution is not None:
        solution = dest / "solution"
        if task.solution_dir is not None:
            shutil.copytree(task.solution_dir, solution, symlinks=False)
        else:
            _copy_file(task.solution, solution / task.solution.name)
    doc = scenario_doc(task, mounts, family=family, tags=tags, source=source, kind=kind)
    head = (
        f"# Imported by `assay import {task.format}` from {source}. The task's files are copied unchanged.\n"
    )
    (dest / "scenario.yaml").write_text(
        head + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=100), encoding="utf-8"
    )


def solution_job(folder: Path, project: Path) -> ScenarioJob:
    """The scenario as the solution run needs it (read back from the written scenario.yaml, before
    the compiler can take it: it has no reference yet)."""
    doc = yaml.safe_load((folder / "scenario.yaml").read_text(encoding="utf-8"))
    root = folder.relative_to(project).as_posix() if folder.is_relative_to(project) else str(folder)
    env = doc.get("environment") or {}
    return ScenarioJob(
        id=doc["id"],
        root=root,
        family=doc.get("family") or doc["id"],
        seed=f"{root}/seed",
        prompt="",
        checks=(),
        workdir=doc.get("workdir"),
        mounts=tuple(
            ScenarioMount(
                path=m["path"],
                source=f"{root}/{m['from']}",
                writable=bool(m.get("writable")),
                hidden=bool(m.get("hidden")),
            )
            for m in doc.get("mounts") or []
        ),
        environment=Environment(
            python=env.get("python"), pip=tuple(env.get("pip") or ()), apt=tuple(env.get("apt") or ())
        ),
        env=dict(doc.get("env") or {}),
    )
