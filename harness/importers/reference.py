"""The reference of an imported task: its solution, run in the sandbox on a copy of the seed.

The solution runs the way an agent would: the workspace at the task's working directory, the
mounts the agent sees, the scenario environment, the network off, the agent's time limit; its
script is shown read-only at /solution. What it added or changed under the working directory
becomes `reference/`, what it added or changed in a writable mount that mount's reference
overlay. A solution that fails or deletes files cannot be expressed as reference overlays: the
task is refused with that.

Before it, the image's build steps (RUNs that make files: a data generator, `echo ... > file`)
run the same way on the seed and the writable mounts, and what they leave replaces them. Both
run with SHIMS: the packages they would install are the scenario environment's already.
"""

from __future__ import annotations

import filecmp
import shlex
import shutil
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from compiler.contract import ScenarioJob
from harness.importers.dockerfile import Step
from harness.sandbox.isolation import Mount, SandboxLimits, select
from harness.sandbox.launch import Launcher
from harness.sandbox.scenario import copy_mounts, mount_dir, refuse_without_mounts, view
from harness.sandbox.scenario_env import ScenarioEnv
from harness.trial import workspace
from harness.trial.environment import SYSTEM_PATH

SOLUTION_DIR = Path("/solution")
BUILD_DIR = Path("/.assay-build")
"""Where a build run's script is shown (read-only)."""


STOPPED = "stopped: the import is being interrupted"


class SolutionFailed(Exception):
    """The solution did not produce a reference (the reason is the message)."""


class BuildFailed(SolutionFailed):
    """The image's build steps did not run here (the reason is the message)."""


def _tail(log: Path, lines: int = 6) -> str:
    try:
        text = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(text[-lines:])


class Changes(NamedTuple):
    """What a run changed in one writable mount, relative to it."""

    written: list[str]
    """Files and folders added, and files changed."""
    deleted: list[str]


def _mount_changes(before: Path, after: Path) -> Changes:
    written: list[str] = []
    deleted: list[str] = []
    stack = [(filecmp.dircmp(before, after, ignore=[]), "")]
    while stack:
        d, where = stack.pop()
        deleted += [f"{where}{n}" for n in d.left_only]
        written += [f"{where}{n}" for n in (*d.right_only, *d.diff_files)]
        stack += [(sub, f"{where}{name}/") for name, sub in d.subdirs.items()]
    return Changes(sorted(written), sorted(deleted))


@dataclass(frozen=True)
class Reference:
    """A solution's result: the overlay of the working directory, and of each writable mount it changed."""

    workspace: Path
    mounts: dict[str, Path]
    """Mount path -> its overlay."""


SHIMS = r"""
apt-get() { :; }; apt() { :; }; pip() { :; }; pip3() { :; }
rm() { case " $* " in *" /var/lib/apt"*) return 0 ;; esac; command rm "$@"; }
curl() { case " $* " in */uv/install.sh" "*|*/uv/[0-9]*/install.sh" "*) echo : ;; *) command curl "$@" ;; esac; }
uv() {
  case "$1" in
    init|add|sync|venv|pip) return 0 ;;
    run) shift; while [ "${1#-}" != "$1" ]; do shift; done
         case "$1" in python|python3) shift ;; esac; python3 "$@" ;;
    *) command uv "$@" ;;
  esac
}
export -f apt-get apt pip pip3 rm curl uv
"""
"""Shell functions a build step or a solution runs with: the packages it installs (with apt,
pip or uv) are in the scenario environment already, so installing them again does nothing, and
`uv run` runs the environment's python. uv's installer, fetched with curl, is not needed."""
UV_BY_PATH = "".join(
    f'{where}/uv() {{ uv "$@"; }}; '
    for where in ("/root/.local/bin", "/root/.cargo/bin", "/usr/local/bin", "/bin")
)
"""uv named by where its installer or image puts it (a function, not exported: each step defines it)."""


@dataclass(frozen=True)
class Sandboxed:
    """A solution or build run's sandbox: a copy of the seed and the writable mounts."""

    launcher: Launcher
    workspace: workspace.Workspace
    scratch: Path


def _sandbox(
    scenario: ScenarioJob,
    project: Path,
    shown: Mount,
    *,
    environment: ScenarioEnv | None,
    extra_env: dict[str, str],
    isolation: str,
) -> Sandboxed:
    """The workspace (the seed at the task's working directory), the mounts the agent sees, the
    environment, the network off; `shown` is mounted read-only as well."""
    iso = select(isolation)
    refuse_without_mounts(scenario, iso.name)
    scratch = Path(tempfile.mkdtemp(prefix="assay-import-"))
    ws = workspace.create(project / scenario.seed, scratch)
    workspace.commit_baseline(ws)
    copy_mounts(scenario, project, scratch)
    home, tmp = scratch / "home", scratch / "tmp"
    (home / ".local" / "bin").mkdir(parents=True)
    (home / ".local" / "bin" / "env").write_text("", encoding="utf-8")  # uv's installer leaves one
    tmp.mkdir()
    seen = view(scenario, project, ws.root, mounts_root=scratch, checks=False, environment=environment)
    env = seen.variables(
        {
            "HOME": str(home),
            "PATH": SYSTEM_PATH,
            "LANG": "C.UTF-8",
            "TMPDIR": str(tmp),
            "PYTHONDONTWRITEBYTECODE": "1",
            **extra_env,
        }
    )
    launcher = Launcher(
        isolation=iso,
        cwd=seen.cwd or ws.root,
        host_cwd=ws.root,
        env=env,
        home=home,
        mounts=(
            Mount(ws.root, ws.root, writable=True),
            Mount(home, home, writable=True),
            Mount(tmp, tmp, writable=True),
            *seen.mounts,
            *(Mount(p, p, writable=False) for p in seen.read_only),
            shown,
        ),
        network=False,
        limits=SandboxLimits(),
        label=f"import-{scenario.id}",
    )
    return Sandboxed(launcher, ws, scratch)


def run_build(
    scenario: ScenarioJob,
    project: Path,
    steps: list[Step],
    *,
    environment: ScenarioEnv | None,
    timeout_s: float,
    isolation: str = "auto",
    cancel: threading.Event | None = None,
) -> None:
    """Run the image's build steps on the scenario's seed and writable mounts, in place: what they
    leave there is what the image has. Raises BuildFailed with the reason (`cancel` set: ended
    early, and a BuildFailed saying so)."""
    folder = Path(tempfile.mkdtemp(prefix="assay-build-"))
    folder.chmod(0o755)  # the sandbox's user reads the script
    lines = ["#!/bin/bash", SHIMS]
    for i, step in enumerate(steps, 1):
        lines.append(
            f"(cd {shlex.quote(step.workdir)} && bash -c {shlex.quote(UV_BY_PATH + chr(10) + step.script)})"
            f" || {{ echo 'build step {i} failed' >&2; exit 1; }}"
        )
    (folder / "build.sh").write_text("\n".join(lines) + "\n", encoding="utf-8")
    box = _sandbox(
        scenario,
        project,
        Mount(folder, BUILD_DIR, writable=False),
        environment=environment,
        extra_env=dict(scenario.env),
        isolation=isolation,
    )
    try:
        log = box.scratch / "build.log"
        done = box.launcher.run(
            ["bash", str(BUILD_DIR / "build.sh")], timeout_s=timeout_s, log=log, stdin=b"", cancel=cancel
        )
        if done.cancelled:
            raise BuildFailed(STOPPED)
        if done.timed_out:
            raise BuildFailed(
                f"the image's build steps did not finish within {timeout_s:g} s offline: {_tail(log)}"
            )
        if done.exit_code != 0:
            raise BuildFailed(f"the image's build steps failed here (network off): {_tail(log)}")
        seed = project / scenario.seed
        shutil.rmtree(seed)
        workspace.copy_tree(box.workspace.root, seed)
        for m in scenario.mounts:
            if m.writable:
                shutil.rmtree(project / m.source)
                workspace.copy_tree(mount_dir(box.scratch, m), project / m.source)
    finally:
        shutil.rmtree(box.scratch, ignore_errors=True)
        shutil.rmtree(folder, ignore_errors=True)


def run_solution(
    scenario: ScenarioJob,
    project: Path,
    solution: Path,
    *,
    environment: ScenarioEnv | None,
    extra_env: dict[str, str],
    timeout_s: float,
    isolation: str = "auto",
    cancel: threading.Event | None = None,
) -> Reference:
    """Run the solution on a copy of the seed; return the reference overlays (of the working
    directory, and of each writable mount the solution changed). `cancel` set: the solution is
    ended early, and SolutionFailed says so.

    The caller moves them into place (they live in a temporary folder of their own).
    """
    # A solution folder (Harbor's solution/) is shown at /solution; a lone script at /solution/<name>.
    shown = Mount(
        solution.resolve(),
        SOLUTION_DIR / solution.name if solution.is_file() else SOLUTION_DIR,
        writable=False,
    )
    box = _sandbox(
        scenario, project, shown, environment=environment, extra_env=extra_env, isolation=isolation
    )
    try:
        return _solve(box, scenario, project, solution, timeout_s, cancel)
    except BaseException:  # a refused solution leaves no copy of the task behind in the temp folder
        shutil.rmtree(box.scratch, ignore_errors=True)
        raise


def _solve(
    box: Sandboxed,
    scenario: ScenarioJob,
    project: Path,
    solution: Path,
    timeout_s: float,
    cancel: threading.Event | None,
) -> Reference:
    """The solution run in `box`; its reference overlays, or SolutionFailed with the reason."""
    scratch, ws = box.scratch, box.workspace
    log = scratch / "solution.log"
    script = SOLUTION_DIR / solution.name if solution.is_file() else SOLUTION_DIR / "solve.sh"
    done = box.launcher.run(
        ["bash", "-c", f"{SHIMS}\nexec bash {shlex.quote(str(script))}"],
        timeout_s=timeout_s,
        log=log,
        stdin=b"",
        cancel=cancel,
    )
    if done.cancelled:
        raise SolutionFailed(STOPPED)
    if done.timed_out:
        raise SolutionFailed(f"the solution did not finish within {timeout_s:g} s offline: {_tail(log)}")
    if done.exit_code != 0:
        raise SolutionFailed(f"the solution failed here (exit {done.exit_code}, network off): {_tail(log)}")
    changed = workspace.changes(ws)
    deleted = [rel for rel in changed if not (ws.root / rel).exists() and not (ws.root / rel).is_symlink()]
    if deleted:
        raise SolutionFailed(
            f"the solution deletes seed files ({', '.join(deleted[:5])}); a reference overlay cannot"
        )
    mounts: dict[str, Path] = {}
    for m in scenario.mounts:
        if not m.writable:
            continue
        after = mount_dir(scratch, m)
        done_here = _mount_changes(project / m.source, after)
        if done_here.deleted:
            gone = ", ".join(f"{m.path}/{rel}" for rel in done_here.deleted[:5])
            raise SolutionFailed(
                f"the solution deletes files of {m.path} ({gone}); a reference overlay cannot"
            )
        if done_here.written:
            overlay = scratch / "reference-mounts" / str(len(mounts))
            for rel in done_here.written:
                src, target = after / rel, overlay / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                if src.is_dir() and not src.is_symlink():
                    shutil.copytree(src, target, symlinks=True)
                else:
                    shutil.copy2(src, target, follow_symlinks=False)
            mounts[m.path] = overlay
    if not changed and not mounts:
        raise SolutionFailed("the solution changes nothing in the working directory or the writable mounts")
    reference = scratch / "reference"
    reference.mkdir()
    for rel in changed:
        target = reference / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ws.root / rel, target, follow_symlinks=False)
    return Reference(reference, mounts)
