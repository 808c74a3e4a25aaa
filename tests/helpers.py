"""Helpers shared by the test packages (fixtures live in tests/conftest.py).

`make_job` builds a job straight from the contract models (the compiler's job files are not
needed to test the runner or the grader); by default a job of the `fix` scenario of
tests/fixtures/runner/project, the project the `project` fixture copies.

`assay` runs the real CLI in this process: `harness.cli.main(argv)` with stdout and stderr
captured, the exit code returned the way a subprocess would give it. One smoke test
(tests/test_cli_smoke.py) still spawns `python -m harness`; tests that signal or kill the
CLI process start it themselves.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, AnyStr

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
from harness.cli import main

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
BARE_ENV = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
"""A user's environment with only the system's tools on PATH (for `assay(..., env=BARE_ENV)`)."""
EXAMPLE_PARTS = ("specs", "tools", "guides", "wiki")
"""What the example project (this repository) is made of besides its scenarios."""
FIXTURE = FIXTURES / "runner" / "project"
"""The runner's small project: scenario `fix`, tool `mytool` in tools/bin, the scripted agent's script."""


@contextlib.contextmanager
def _environ(env: Mapping[str, str] | None) -> Iterator[None]:
    """os.environ replaced by env for the duration (unchanged when None)."""
    if env is None:
        yield
        return
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def assay(
    *args: str | Path, cwd: Path | None = None, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`assay ARGS` in this process, in cwd (default: the current folder), under env (default: ours).

    Returns what `subprocess.run(..., capture_output=True, text=True)` would: the exit code
    `main` returns (or argparse's SystemExit code) and everything written to stdout and stderr.
    """
    argv = [str(a) for a in args]
    out, err = io.StringIO(), io.StringIO()
    with (
        contextlib.chdir(cwd or Path.cwd()),
        _environ(env),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse: --help and usage errors; as the interpreter would exit
            if isinstance(exc.code, str):
                print(exc.code, file=err)
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return subprocess.CompletedProcess(["assay", *argv], code, out.getvalue(), err.getvalue())


def fix_scenario(*, checks: tuple[CheckSpec, ...] | None = None) -> ScenarioJob:
    """The `fix` scenario of the fixture project: remove the unused import from app/main.py."""
    compiles = CheckSpec(id="compiles", kind="command", params={"run": "python3 -m py_compile app/main.py"})
    return ScenarioJob(
        id="fix",
        root="scenarios/fix",
        family="lint",
        seed="scenarios/fix/seed",
        reference="scenarios/fix/reference",
        entry=("app/main.py",),
        writable=("app/**",),
        prompt="Remove the unused import from app/main.py.\n",
        checks=checks or (compiles,),
    )


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


def command_agent(command: str, *, requires: tuple[str, ...] = (), id: str = "cmd") -> AgentSpec:
    """An agent that is a shell command (seed 000's --agent-cmd)."""
    return AgentSpec(id=id, adapter="command", command=command, requires=requires)


def make_job(
    scenario: ScenarioJob | None = None,
    *,
    agent: AgentSpec | None = None,
    cell: Cell | None = None,
    trial: int = 1,
    matrix: str = "test",
    limits: Limits | None = None,
    options: Options | None = None,
    writable: tuple[str, ...] | None = None,
    hash: str = "h1",
) -> Job:
    """A job of scenario (default: `fix`) by agent (default: noop) in cell (default: the control).

    writable replaces the scenario's writable globs.
    """
    scenario = scenario or fix_scenario()
    if writable is not None:
        scenario = scenario.model_copy(update={"writable": writable})
    cell = cell or none_cell()
    agent = agent or AgentSpec(id="noop", adapter="noop")
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


def write_jobs(folder: Path, command: str, *, n: int, matrix: str) -> list[Job]:
    """n job files of one command agent (trials 1..n of `matrix`) written as folder/tNN.json."""
    folder.mkdir(parents=True, exist_ok=True)
    jobs = [make_job(agent=command_agent(command), trial=t, matrix=matrix) for t in range(1, n + 1)]
    for job in jobs:
        (folder / f"t{job.trial:02d}.json").write_text(job.model_dump_json())
    return jobs


def sigint_default() -> None:
    """A child's `preexec_fn`: Ctrl-C (SIGINT) back to its default action.

    A process started in the background by a non-interactive shell (CI, `nohup`, `&`) inherits
    SIGINT ignored, and Python then never raises KeyboardInterrupt: a test that presses Ctrl-C
    on a runner must give it the terminal's disposition.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def assay_argv(project: Path, *args: str | Path) -> list[str]:
    """argv of the assay CLI as a process of its own (`python -m harness`) on `project`."""
    return [sys.executable, "-m", "harness", "--project", str(project), *map(str, args)]


def matrix_argv(project: Path, *args: str, runs: Path, jobs: Path) -> list[str]:
    """argv of the assay CLI (`python -m harness`) running the job files `jobs` of `project` into `runs`."""
    return assay_argv(project, "matrix", "--job-file", jobs, "--runs", runs, *args)


_STARTED: list[subprocess.Popen[Any]] = []


def started(proc: subprocess.Popen[AnyStr]) -> subprocess.Popen[AnyStr]:
    """Registers a child a test leaves running while it polls: teardown ends it, pass or fail.

    A test that fails mid-poll would otherwise leave its runner (and the runner's open pipes) to
    the garbage collector, which warns inside whichever test happens to run next.
    """
    _STARTED.append(proc)
    return proc


def end_started() -> None:
    """Kills every registered child still running, reaps it and closes its pipes."""
    while _STARTED:
        proc = _STARTED.pop()
        if proc.poll() is None:
            proc.kill()
        try:
            proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:  # a grandchild holds a pipe open: close ours regardless
            proc.wait()
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()


def files_named(root: Path, name: str) -> list[Path]:
    """Every file called `name` under root, walking a tree a live runner may be changing meanwhile.

    `Path.rglob` raises when a folder it listed is removed before it descends (a trial's scratch
    folder, a renamed trial folder); os.walk skips such a folder, which is what a poll wants.
    """
    return [Path(top, name) for top, _dirs, files in os.walk(root) if name in files]


def compiled_copy(dest: Path) -> Path:
    """A compiled copy of the small valid project (tests/fixtures/specs/valid: matrix `smoke`) at dest."""
    shutil.copytree(FIXTURES / "specs" / "valid", dest)
    done = assay("--project", dest, "compile")
    assert done.returncode == 0, done.stderr
    return dest
