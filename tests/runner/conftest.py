"""Fixtures of the runner tests: a copy of a small project and a job builder.

Jobs are built directly from the contract models (the compiler's job files are not needed
to test the runner); everything they run is real: processes, git, files.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from compiler.contract import (
    AgentSpec,
    Canaries,
    Cell,
    CheckSpec,
    Job,
    Limits,
    Options,
    Provisions,
    ScenarioJob,
    job_id,
)

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "runner" / "project"

JobFactory = Callable[..., Job]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A private copy of the fixture project."""
    dest = tmp_path / "project"
    shutil.copytree(FIXTURE, dest, symlinks=True)
    return dest


def bin_cell(**extra: Any) -> Cell:
    """The bin/none/off cell: mytool on PATH through the shim."""
    return Cell(
        name="bin/none/off",
        levels={"tool": "bin", "knowledge": "none", "network": "off"},
        provisions=Provisions(path=("tools/bin",), trace=("mytool",), serve=("serve",), **extra),
    )


def none_cell(**extra: Any) -> Cell:
    """The control cell: mytool must be absent."""
    return Cell(
        name="none/none/off",
        levels={"tool": "none", "knowledge": "none", "network": "off"},
        control=True,
        provisions=Provisions(canaries=Canaries(absent=("mytool",)), **extra),
    )


def make_job(
    *,
    agent: AgentSpec | None = None,
    cell: Cell | None = None,
    trial: int = 1,
    matrix: str = "test",
    limits: Limits | None = None,
    options: Options | None = None,
    writable: tuple[str, ...] = ("app/**",),
    hash: str = "h1",
) -> Job:
    """A job of the `fix` scenario of the fixture project."""
    cell = cell or none_cell()
    agent = agent or AgentSpec(id="noop", adapter="noop")
    scenario = ScenarioJob(
        id="fix",
        root="scenarios/fix",
        family="lint",
        seed="scenarios/fix/seed",
        reference="scenarios/fix/reference",
        entry=("app/main.py",),
        writable=writable,
        prompt="Remove the unused import from app/main.py.\n",
        checks=(
            CheckSpec(id="compiles", kind="command", params={"run": "python3 -m py_compile app/main.py"}),
        ),
    )
    return Job(
        id=job_id(matrix, cell.name, agent.id, scenario.id, trial),
        hash=hash,
        matrix=matrix,
        trial=trial,
        scenario=scenario,
        cell=cell,
        agent=agent,
        limits=limits or Limits(timeout_s=60),
        options=options or Options(isolation="none", infra_retries=2),
    )


def command_agent(command: str, id: str = "cmd") -> AgentSpec:
    """An agent that is a shell command (seed 000's --agent-cmd)."""
    return AgentSpec(id=id, adapter="command", command=command)
