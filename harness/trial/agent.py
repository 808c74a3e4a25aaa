"""From a job's agent to the adapter command line and its resolved arguments.

`agent.adapter` is a built-in short name (`adapters.<name>` run with the harness's Python),
`command` (agent.command through `sh -c`, seed 000's --agent-cmd), or a dotted module path
run with `python -m`. Arguments that name project files are resolved here, outside the
sandbox, because the agent cannot read the project: the scripted agent's script (its
scenario's own `scenario_script`, else the project's `script`) is inlined as `script_inline`; the oracle gets the scenario's reference overlay copied into the
run directory as `reference_dir`.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import yaml

import adapters
from compiler.contract import Job
from harness.errors import UsageError
from harness.trial.workspace import copy_tree

CODE_ROOT = Path(adapters.__file__).resolve().parent.parent
"""The folder holding the adapters package, put on the adapter's sys.path (not its env)."""

REFERENCE_DIR = ".assay/reference"
"""Run-dir-relative copy of the scenario's reference, for the oracle only."""

_RUN_MODULE = "import runpy, sys; sys.path.insert(0, sys.argv.pop(1)); runpy.run_module(sys.argv[1], run_name='__main__', alter_sys=True)"


def _python_module(module: str) -> list[str]:
    return [sys.executable, "-c", _RUN_MODULE, str(CODE_ROOT), module]


def command(job: Job) -> list[str]:
    """The argv that runs the job's adapter."""
    agent = job.agent
    if agent.adapter == "command":
        if not agent.command:
            raise UsageError(f"agent {agent.id!r}: adapter 'command' needs a command")
        return ["sh", "-c", agent.command]
    if "." not in agent.adapter:
        module = f"adapters.{agent.adapter}"
        if importlib.util.find_spec(module) is None:
            raise UsageError(
                f"agent {agent.id!r}: no built-in adapter {agent.adapter!r} (no module {module})"
            )
        return _python_module(module)
    return _python_module(agent.adapter)


def _project_file(project: Path, rel: str) -> Path | None:
    """A file named by an agent argument: project-relative, or relative to specs/agents/
    (where agent specs live, for a compiler that leaves arguments as written)."""
    for base in (project, project / "specs" / "agents"):
        path = (base / rel).resolve()
        if path.is_file() and (path == project or project in path.parents):
            return path
    return None


def _script(job: Job, project: Path, args: dict[str, Any]) -> dict[str, Any]:
    """The scripted agent's script for this job: the scenario's own (`scenario_script`, a path in
    the scenario's folder), else the project file `script`. One without steps for the scenario is
    refused here (the trial fails to run, with this reason), never run as an agent doing nothing;
    the compiler refuses it first (E237)."""
    sid = job.scenario.id
    own = args.get("scenario_script")
    if isinstance(own, str):
        folder = (project / job.scenario.root).resolve()
        path = (folder / own).resolve()
        if path.is_file() and folder in path.parents:
            script = yaml.safe_load(path.read_text(encoding="utf-8"))
            if isinstance(script, dict):
                return script
    central = args.get("script")
    if isinstance(central, str):
        found = _project_file(project, central)
        if found is None:
            raise UsageError(f"agent {job.agent.id!r}: script {central!r} not found under {project}")
        script = yaml.safe_load(found.read_text(encoding="utf-8"))
        by_scenario = script.get("scenarios") if isinstance(script, dict) else None
        if isinstance(script, dict) and (
            "steps" in script
            or (isinstance(by_scenario, dict) and (sid in by_scenario or "default" in by_scenario))
        ):
            return script
    raise UsageError(
        f"agent {job.agent.id!r} has no script steps for scenario {sid!r}"
        + (f" (no {job.scenario.root}/{own})" if isinstance(own, str) else "")
        + "; run `assay new scripts "
        + sid
        + "` or add them to its script"
    )


def resolve_args(job: Job, *, project: Path, run_dir: Path) -> dict[str, Any]:
    """The adapter arguments as the adapter receives them in BENCH_AGENT_ARGS."""
    args: dict[str, Any] = dict(job.agent.args)
    if job.agent.model and "model" not in args:
        args["model"] = job.agent.model
    if "script_inline" not in args and ("script" in args or "scenario_script" in args):
        args["script_inline"] = _script(job, project, args)
    if job.agent.adapter == "oracle":
        if job.scenario.reference is None:
            raise UsageError(f"scenario {job.scenario.id!r} has no reference for the oracle")
        dest = run_dir / REFERENCE_DIR
        copy_tree(project / job.scenario.reference, dest)
        args["reference_dir"] = str(dest)
    return args


def describe(argv: list[str]) -> str:
    """A short human label of what ran, for run.json."""
    if len(argv) >= 5 and argv[1] == "-c" and argv[2] == _RUN_MODULE:
        return f"python -m {argv[4]}"
    return " ".join(argv)
