"""Terminal-Bench's task format: `task.yaml`, `Dockerfile`, `docker-compose.yaml`, `run-tests.sh`,
`solution.sh`, `tests/`.

The instruction is `task.yaml`'s `instruction` (or the `base` entry of older `descriptions`);
`max_agent_timeout_sec` and `max_test_timeout_sec` become the agent's and the check's limits; the
rest of `task.yaml` is kept as metadata. The compose file may hold the one task container only:
another service (a server the task talks to), an image built elsewhere or a GPU is an environment
this machine does not reproduce. The tests run with `TEST_DIR=/tests`, as in Terminal-Bench.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from harness.importers import dockerfile
from harness.importers.scripts import TEST_DIR
from harness.importers.task import Task, finish, memory_mb, seconds, take_solution, take_tests

FORMAT = "terminal-bench"
MARKER = "task.yaml"


def is_task(folder: Path) -> bool:
    """A folder holding a Terminal-Bench task."""
    return (folder / MARKER).is_file()


def _load_yaml(path: Path, task: Task) -> Any:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        task.refuse(f"{path.name} cannot be read: {exc}")
        return None


def _instruction(spec: dict[str, Any]) -> str:
    if isinstance(spec.get("instruction"), str):
        return str(spec["instruction"])
    for entry in spec.get("descriptions") or []:  # the format's earlier spelling
        if (
            isinstance(entry, dict)
            and entry.get("key") == "base"
            and isinstance(entry.get("description"), str)
        ):
            return str(entry["description"])
    return ""


def _environment_list(value: Any) -> dict[str, str]:
    if isinstance(value, dict):
        return {str(k): str(v) for k, v in value.items()}
    out: dict[str, str] = {}
    for item in value or []:
        key, _, val = str(item).partition("=")
        out[key] = val
    return out


def _compose(task: Task) -> None:
    path = task.root / "docker-compose.yaml"
    if not path.is_file():
        path = task.root / "docker-compose.yml"
    if not path.is_file():
        return
    doc = _load_yaml(path, task)
    services = (doc or {}).get("services") if isinstance(doc, dict) else None
    if not isinstance(services, dict) or not services:
        return
    if len(services) > 1:
        task.refuse(
            f"extra compose services ({', '.join(sorted(services))}): the task needs more than one container"
        )
        return
    (service,) = services.values()
    if not isinstance(service, dict):
        return
    if "build" not in service:
        task.refuse(f"the task container is the image {service.get('image')!r}, built elsewhere")
    if service.get("runtime") == "nvidia" or "gpus" in service or "devices" in str(service.get("deploy", "")):
        task.refuse("the task asks for a GPU")
    for key, value in _environment_list(service.get("environment")).items():
        value = value.replace("${T_BENCH_TEST_DIR}", TEST_DIR)
        if "${" in value:
            continue  # Terminal-Bench's own plumbing (log paths, container names)
        task.env[key] = value
    limits = ((service.get("deploy") or {}).get("resources") or {}).get("limits") or {}
    cpus = service.get("cpus", limits.get("cpus"))
    if cpus is not None:
        try:
            task.cpus = float(cpus)
        except ValueError:
            task.notes.append(f"compose cpus {cpus!r} not understood")
    memory = service.get("mem_limit", limits.get("memory"))
    if memory is not None:
        task.memory_mb = memory_mb(memory, bare="b")
        if task.memory_mb is None:
            task.notes.append(f"compose memory {memory!r} not understood")


def read(folder: Path, *, task_id: str) -> Task:
    """One Terminal-Bench task, read (its `refusals` say why it cannot be imported)."""
    task = Task(format=FORMAT, name=folder.name, id=task_id, root=folder, context=folder)
    spec = _load_yaml(folder / MARKER, task)
    spec = spec if isinstance(spec, dict) else {}
    task.instruction = _instruction(spec)
    if not task.instruction.strip():
        task.refuse("task.yaml has no instruction")
    parser = spec.get("parser_name", "pytest")
    if parser != "pytest":
        task.refuse(f"the test output parser is {parser!r}: only pytest suites are imported")
    task.meta = {k: v for k, v in spec.items() if k not in ("instruction", "descriptions")}
    for key, attr in (("max_agent_timeout_sec", "timeout_s"), ("max_test_timeout_sec", "check_timeout_s")):
        limit = seconds(task, spec.get(key), key)
        if limit is not None:
            setattr(task, attr, limit)
    docker = folder / "Dockerfile"
    if docker.is_file():
        task.build = dockerfile.read(docker.read_text(encoding="utf-8", errors="replace"))
        for reason in task.build.refusals:
            task.refuse(reason)
        task.env.update(task.build.env)
    else:
        task.refuse("no Dockerfile")
    _compose(task)
    task.env.setdefault("TEST_DIR", TEST_DIR)
    take_tests(task, folder / "run-tests.sh", folder / "tests")
    if not take_solution(task, folder / "solution.sh"):
        task.refuse(
            "the solution is a solution.yaml of terminal commands, not a script"
            if (folder / "solution.yaml").is_file()
            else "no solution.sh: the reference cannot be made"
        )
    finish(task)
    return task


def dataset_tasks(path: Path) -> list[Path]:
    """The task folders at or below `path` (a task itself, or a dataset of them), sorted."""
    if is_task(path):
        return [path]
    return sorted(p.parent for p in path.rglob(MARKER) if not any(part.startswith(".") for part in p.parts))
