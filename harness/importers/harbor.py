"""Harbor's task format: `task.toml`, `instruction.md`, `environment/` (its Dockerfile and build
context), `tests/` (`test.sh` and the test files, copied to /tests), `solution/` (`solve.sh`, copied
to /solution and run from the working directory).

`task.toml` gives the limits (`[agent] timeout_sec`, `[verifier] timeout_sec`, `[environment] cpus`,
`memory_mb` or the earlier `memory = "4G"`), the working directory when it names one (`[environment]
workdir`, else the Dockerfile's `WORKDIR`), and the environment variables of the agent
(`[environment] env`), the verifier and the solution; its `[task]` and `[metadata]` tables are kept
as metadata. Refused: a compose environment with other services, a prebuilt `docker_image` this
machine does not provide, GPUs, MCP servers, a skills folder handed to the agent's configuration,
multi-step tasks, and any environment value taken from the host (`${VAR}`), which the sandbox never
passes in.
"""

from __future__ import annotations

import posixpath
import tomllib
from pathlib import Path
from typing import Any

import yaml

from harness.importers import dockerfile
from harness.importers.scripts import TEST_DIR
from harness.importers.task import Task, finish, memory_mb, seconds, take_solution, take_tests

FORMAT = "harbor"
MARKER = "task.toml"


def is_task(folder: Path) -> bool:
    """A folder holding a Harbor task (a multi-step one has its instructions under steps/: it is
    listed, and refused with that reason, rather than passed over)."""
    return (folder / MARKER).is_file() and (
        (folder / "instruction.md").is_file() or (folder / "steps").is_dir()
    )


def _env(table: Any, what: str, task: Task) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in (table or {}).items() if isinstance(table, dict) else ():
        text = str(value)
        if "${" in text:
            task.refuse(
                f"{what} {key} comes from the host ({text}); the sandbox never passes host variables in"
            )
            continue
        out[str(key)] = text
    return out


def _environment(task: Task, env: dict[str, Any]) -> None:
    if env.get("gpus"):
        task.refuse(f"the task asks for {env['gpus']} GPU(s)")
    if env.get("mcp_servers"):
        task.refuse("the task gives the agent MCP servers")
    if env.get("skills_dir"):
        task.refuse(f"the task hands a skills folder ({env['skills_dir']}) to the agent's configuration")
    if isinstance(env.get("cpus"), int | float):
        task.cpus = float(env["cpus"])
    if isinstance(env.get("memory_mb"), int):
        task.memory_mb = int(env["memory_mb"])
    elif env.get("memory") is not None:  # the format's earlier spelling: memory = "4G"
        task.memory_mb = memory_mb(env["memory"])
    task.env.update(_env(env.get("env"), "environment variable", task))
    compose = task.context / "docker-compose.yaml"
    if compose.is_file():
        try:
            services = (yaml.safe_load(compose.read_text(encoding="utf-8")) or {}).get("services") or {}
        except yaml.YAMLError as exc:
            task.refuse(f"environment/docker-compose.yaml cannot be read: {exc}")
            services = {}
        if len(services) > 1:
            task.refuse(
                f"extra compose services ({', '.join(sorted(services))}): the task needs more than one container"
            )
    image = env.get("docker_image")
    docker = task.context / "Dockerfile"
    if docker.is_file():
        task.build = dockerfile.read(docker.read_text(encoding="utf-8", errors="replace"))
    elif image:
        task.build = dockerfile.read(f"FROM {image}\n")
    else:
        task.refuse("no environment/Dockerfile and no docker_image")
        return
    workdir = env.get("workdir")
    if isinstance(workdir, str) and workdir.startswith("/") and workdir.rstrip("/"):
        # the task's own working directory wins over the image's (the agent starts there)
        task.build.workdir = posixpath.normpath(workdir)
        task.build.refusals = [r for r in task.build.refusals if not r.startswith("no WORKDIR")]
    for reason in task.build.refusals:
        task.refuse(reason)
    task.env = {**task.build.env, **task.env}


def read(folder: Path, *, task_id: str) -> Task:
    """One Harbor task, read (its `refusals` say why it cannot be imported)."""
    try:
        spec = tomllib.loads((folder / MARKER).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        spec = {}
        refusal = f"task.toml cannot be read: {exc}"
    else:
        refusal = ""
    name = str((spec.get("task") or {}).get("name") or folder.name)
    task = Task(format=FORMAT, name=name, id=task_id, root=folder, context=folder / "environment")
    if refusal:
        task.refuse(refusal)
    if (folder / "steps").is_dir():
        task.refuse("a multi-step task (steps/): one instruction per scenario is imported")
    if (folder / "instruction.md").is_file():
        task.instruction = (folder / "instruction.md").read_text(encoding="utf-8", errors="replace")
    task.meta = {
        k: v for k, v in spec.items() if k in ("task", "metadata", "source", "version", "schema_version")
    }
    agent, verifier = spec.get("agent") or {}, spec.get("verifier") or {}
    task.timeout_s = seconds(task, agent.get("timeout_sec"), "[agent] timeout_sec") or task.timeout_s
    task.check_timeout_s = (
        seconds(task, verifier.get("timeout_sec"), "[verifier] timeout_sec") or task.check_timeout_s
    )
    task.check_env = _env(verifier.get("env"), "verifier variable", task)
    task.solution_env = _env((spec.get("solution") or {}).get("env"), "solution variable", task)
    _environment(task, spec.get("environment") or {})
    take_tests(task, folder / "tests" / "test.sh", folder / "tests")
    if not take_solution(task, folder / "solution" / "solve.sh", folder=folder / "solution"):
        task.refuse("no solution/solve.sh: the reference cannot be made")
    task.env.setdefault("TEST_DIR", TEST_DIR)
    finish(task)
    return task


def dataset_tasks(path: Path) -> list[Path]:
    """The task folders at or below `path`, sorted."""
    if is_task(path):
        return [path]
    return sorted(p.parent for p in path.rglob(MARKER) if is_task(p.parent))
