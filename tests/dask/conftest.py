"""Fixtures of the Dask tests: a real scheduler and real worker processes on loopback.

Nothing is simulated: `dask scheduler` and `dask worker` run as subprocesses (no nanny, so a
killed worker stays dead), the client is `python -m harness matrix --executor dask`, and every
trial goes through the real runner in a child process of a worker.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
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
)
from harness.artifacts.run_tree import find_runs
from tests.helpers import fix_scenario, make_job, matrix_argv, sigint_default

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "dask" / "project"

CHECK_FIXED = "python3 -c \"import sys; sys.exit('import os' in open('app/main.py').read())\""


def cells() -> tuple[Cell, Cell]:
    """The control cell (mytool absent) and bin/none/off (mytool on PATH)."""
    control = Cell(
        name="none/none/off",
        levels={"tool": "none", "knowledge": "none", "network": "off"},
        control=True,
        provisions=Provisions(canaries=Canaries(absent=("mytool",))),
    )
    binary = Cell(
        name="bin/none/off",
        levels={"tool": "bin", "knowledge": "none", "network": "off"},
        provisions=Provisions(path=("tools/bin",), trace=("mytool",)),
    )
    return control, binary


def scripted(skill: float = 0.5) -> AgentSpec:
    """The scripted agent following the fixture's script (half a second of 'thinking')."""
    return AgentSpec(id="scripted", adapter="scripted", args={"script": "scripts/fixer.yaml", "skill": skill})


def cluster_job(
    agent: AgentSpec,
    cell: Cell,
    trial: int,
    *,
    matrix: str = "dasktest",
    timeout_s: float = 60,
    env_pass: tuple[str, ...] = (),
) -> Job:
    """A job of the fixture's `fix` scenario, judged by CHECK_FIXED, with no infrastructure retries."""
    return make_job(
        fix_scenario(checks=(CheckSpec(id="fixed", kind="command", params={"run": CHECK_FIXED}),)),
        agent=agent,
        cell=cell,
        trial=trial,
        matrix=matrix,
        hash=f"h-{agent.id}",
        limits=Limits(timeout_s=timeout_s),
        options=Options(isolation="none", infra_retries=0, env_pass=env_pass),
    )


def write_jobs(folder: Path, jobs: list[Job]) -> Path:
    """Job files as the compiler writes them (one JSON per job)."""
    folder.mkdir(parents=True, exist_ok=True)
    for number, job in enumerate(jobs):
        (folder / f"job-{number:04d}.json").write_text(job.model_dump_json(indent=2), encoding="utf-8")
    return folder


@pytest.fixture
def project_source() -> Path:
    """The `project` fixture copies the Dask fixture project (its agent thinks for 1.5 s)."""
    return FIXTURE


def child_env(**extra: str) -> dict[str, str]:
    """The environment of every process the tests start: this checkout first on sys.path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    env.update(extra)
    return env


def spawn(
    argv: list[str], *, log: Path, env: dict[str, str], new_session: bool = True
) -> subprocess.Popen[bytes]:
    """A background process writing stdout and stderr to log, started in log's folder.

    Not in this checkout: `python -m` puts the working directory first on sys.path, and the
    processes must import assay from their PYTHONPATH.
    """
    with log.open("wb") as sink:
        return subprocess.Popen(
            argv,
            cwd=log.parent,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=new_session,
            preexec_fn=sigint_default,
        )


class Cluster:
    """A scheduler and named workers, all subprocesses on 127.0.0.1."""

    def __init__(self, base: Path) -> None:
        self.base = base
        base.mkdir(parents=True, exist_ok=True)
        self.scheduler_file = base / "scheduler.json"
        self.workers: dict[str, subprocess.Popen[bytes]] = {}
        self.scheduler = spawn(
            [
                sys.executable,
                "-m",
                "dask",
                "scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--no-dashboard",
                "--scheduler-file",
                str(self.scheduler_file),
            ],
            log=base / "scheduler.log",
            env=child_env(),
        )
        self._wait(lambda: self.scheduler_file.is_file(), "scheduler file")

    @property
    def address(self) -> str:
        return str(json.loads(self.scheduler_file.read_text())["address"])

    def _wait(self, ready: Any, what: str, seconds: float = 60.0) -> None:
        deadline = time.monotonic() + seconds
        while not ready():
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what} not ready after {seconds} s; logs in {self.base}")
            time.sleep(0.1)

    def add_worker(self, name: str, *, nthreads: int = 2, resources: str | None = None, **env: str) -> None:
        """Start a worker and wait until the scheduler knows it."""
        argv = [
            sys.executable,
            "-m",
            "dask",
            "worker",
            "--scheduler-file",
            str(self.scheduler_file),
            "--name",
            name,
            "--nthreads",
            str(nthreads),
            "--no-nanny",
            "--no-dashboard",
            "--local-directory",
            str(self.base / name),
        ]
        if resources:
            argv += ["--resources", resources]
        log = self.base / f"{name}.log"
        self.workers[name] = spawn(argv, log=log, env=child_env(**env))
        self._wait(lambda: b"Registered to" in log.read_bytes(), f"worker {name}")

    def kill_worker(self, name: str) -> None:
        """SIGKILL a worker process, as a crash or a lost machine would."""
        proc = self.workers.pop(name)
        proc.kill()
        proc.wait()

    def stop(self) -> None:
        """Workers first, then the scheduler (stopping both at once can leave a worker hanging)."""
        for group in (list(self.workers.values()), [self.scheduler]):
            for proc in group:
                stop_process(proc)


def stop_process(proc: subprocess.Popen[bytes], timeout: float = 15.0) -> None:
    """SIGTERM a process group, SIGKILL it if it has not exited in time."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    """A scheduler with no workers yet (tests add the workers they need)."""
    pytest.importorskip("distributed", reason="dask.distributed is not installed (pip install assay[dask])")
    made = Cluster(tmp_path / "cluster")
    try:
        yield made
    finally:
        made.stop()


def alive(marker: str, *, argv0: str | None = None) -> list[int]:
    """Pids of live processes whose command line contains marker (and whose argv[0] is argv0)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if argv0 is not None and cmdline.split(b"\0")[0] != argv0.encode():
            continue
        if marker.encode() in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def on_cluster(
    project: Path, cluster: Cluster, *flags: str, runs: Path, jobs: Path, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`assay matrix --executor dask` of the job files against the cluster, waited for."""
    argv = matrix_argv(
        project,
        "--executor",
        "dask",
        "--scheduler-file",
        str(cluster.scheduler_file),
        *flags,
        runs=runs,
        jobs=jobs,
    )
    return subprocess.run(argv, env=child_env(), capture_output=True, text=True, timeout=timeout)


def finished_runs(runs: Path) -> int:
    return len(find_runs(runs))  # os.walk: tolerant of folders renamed by the client meanwhile


def wait_for(condition: object, what: str, seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)
