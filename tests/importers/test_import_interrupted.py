"""An `assay import` that does not finish leaves the project exactly as it was.

Stopped by Ctrl-C or SIGTERM while `assay validate` runs the imported tasks' tests or while a
solution runs, or failing after validation (a full disk, a file where a folder goes, the project's
own specs not compiling): nothing it staged or wrote stays, no temporary folder is left, an earlier
import's scenario, matrix and report survive byte for byte, and an interrupted import says so in one
line and exits 130. The import runs as a real process; a test waits for a marker the sandboxed
command writes (never for a time) before it sends the signal.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from import_util import VERSION, prebuild, require_sandbox

from compiler.contract import Environment
from tests.helpers import ROOT, assay, assay_argv, files_named, sigint_default, started
from tests.mounting import fill, tmpfs

pytestmark = [pytest.mark.isolation, pytest.mark.slow]

KEPT = "nothing of the import was kept: the project is as it was before it"
"""What an import that did not finish says it left."""

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "import" / "harbor" / "word-count"
WAITS = """import time
from pathlib import Path


def test_waits_for_the_go():
    Path("/app/validating").touch()
    while not Path("/app/go").exists():
        time.sleep(0.05)
"""
"""The imported task's tests: they say they have started, then wait until the test lets them end."""
SOLVES_NEVER = "#!/bin/bash\ntouch /app/solving\nwhile :; do sleep 0.05; done\n"
"""A solution that says it has started and never ends (the import's Ctrl-C must end it)."""


def _dataset(root: Path, *, tests: str | None = None, solve: str | None = None) -> Path:
    """A dataset of one Harbor task (word-count, its image on this interpreter's version)."""
    task = root / "word-count"
    shutil.copytree(FIXTURE, task)
    docker = task / "environment" / "Dockerfile"
    docker.write_text(docker.read_text().replace("python:3.11", f"python:{VERSION}"), encoding="utf-8")
    if tests is not None:
        (task / "tests" / "test_wc.py").write_text(tests, encoding="utf-8")
    if solve is not None:
        (task / "solution" / "solve.sh").write_text(solve, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project to import into (its environment built offline, once for the module's tests)."""
    require_sandbox()
    project = tmp_path_factory.mktemp("bare") / "project"
    shutil.copytree(ROOT / "tests" / "fixtures" / "seed000" / "specs", project / "specs")
    (project / "specs" / "matrices" / "mine.yaml").write_text(
        "kind: matrix\nid: mine\ndefault: true\nagents: [noop]\nscenarios: { tags: [mine] }\n"
    )
    (project / "specs" / "noop.yaml").write_text("kind: agent\nid: noop\nadapter: noop\n")
    prebuild(project, Environment(python=VERSION, pip=("pytest",)))
    return project


@pytest.fixture(scope="module")
def imported(bare: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project after an earlier import (`early`: scenario, matrix, report, the oracle agent)."""
    project = tmp_path_factory.mktemp("imported") / "project"
    shutil.copytree(bare, project, symlinks=True)
    data = _dataset(tmp_path_factory.mktemp("early"))
    done = assay("--project", project, "import", "harbor", data, "--name", "early")
    assert done.returncode == 0, done.stderr
    assert (project / "scenarios" / "early-word-count" / "reference" / "counts.txt").is_file()
    return project


def _copy(template: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(template, tmp_path / "project", symlinks=True))


def _tree(project: Path) -> dict[str, tuple[object, ...]]:
    """Every entry under the project: a file's mode and bytes, a folder's mode, a link's target.

    Left out: the environment cache's lock files (`.cache/envs/<key>.lock`). Looking an
    environment up takes its lock, which makes the file; it is a cache's, shared with every
    `assay validate` and `assay matrix`, and removing a lock file another process may hold would
    break the lock. There is no runs/ (an import runs no trial) and no generated/ (nor compiles one).
    """
    out: dict[str, tuple[object, ...]] = {}
    for top, dirs, files in os.walk(project):
        for name in [*dirs, *files]:
            path = Path(top, name)
            rel = path.relative_to(project).as_posix()
            if path.parent == project / ".cache" / "envs" and name.endswith(".lock"):
                continue
            mode = path.lstat().st_mode
            if path.is_symlink():
                out[rel] = ("link", os.readlink(path))
            elif path.is_dir():
                out[rel] = ("dir", mode)
            else:
                out[rel] = ("file", mode, path.read_bytes())
    return out


def _import(project: Path, data: Path, temp: Path, *args: str) -> subprocess.Popen[str]:
    """`assay import harbor DATA` as a process of its own, its temporary folders in `temp`."""
    temp.mkdir(exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(temp)}
    argv = assay_argv(project, "import", "harbor", data, *args)
    return started(
        subprocess.Popen(
            argv,
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=sigint_default,
        )
    )


def _until(proc: subprocess.Popen[str], done: Callable[[], bool]) -> None:
    """Poll until `done`; fail with the import's output if it ends first (or never gets there)."""
    deadline = time.monotonic() + 300  # a hang guard, far beyond the few seconds it takes
    while not done():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            out, err = proc.communicate()
            raise AssertionError(f"the import never got there (exit {proc.returncode}): {out}{err}")
        time.sleep(0.05)


def _said_interrupted(code: int | None, err: str, why: str) -> None:
    """Exit 130, and one line that says the import was interrupted and nothing of it was kept."""
    assert code == 130, err
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert lines[-1] == f"assay: interrupted{why}; {KEPT}", err
    assert sum("interrupted" in line for line in lines) == 1, err


@pytest.mark.parametrize(
    ("sig", "args"),
    [
        pytest.param(signal.SIGINT, ("--name", "blk"), id="ctrl-c-another-dataset"),
        pytest.param(signal.SIGTERM, ("--name", "early", "--force"), id="sigterm-forced-reimport"),
    ],
)
def test_a_signal_while_validating_leaves_the_project_as_it_was(
    imported: Path, tmp_path: Path, sig: signal.Signals, args: tuple[str, ...]
) -> None:
    """Stopped once `assay validate` runs the staged scenario's tests (in scenarios/ by then, its
    matrix written; with --force the earlier import's scenario, matrix and report replaced)."""
    project = _copy(imported, tmp_path)
    before = _tree(project)
    temp = tmp_path / "temp"
    proc = _import(project, _dataset(tmp_path / "data", tests=WAITS), temp, *args)
    _until(proc, lambda: bool(files_named(temp, "validating")))
    name = args[1]
    assert (project / "scenarios" / f"{name}-word-count" / "reference" / "wc.py").is_file()
    assert (
        "waits_for_the_go"
        in (project / "scenarios" / f"{name}-word-count" / "tests" / "test_wc.py").read_text()
    )
    proc.send_signal(sig)
    deadline = time.monotonic() + 300  # a hang guard: the tests end once they see the go
    while proc.poll() is None and time.monotonic() < deadline:
        for marker in files_named(temp, "validating"):  # the running tests' workspaces
            with contextlib.suppress(FileNotFoundError):  # assessed and removed meanwhile
                (marker.parent / "go").touch()
        time.sleep(0.05)
    _out, err = proc.communicate(timeout=60)
    assert _tree(project) == before, err
    assert sorted(temp.iterdir()) == []
    _said_interrupted(proc.returncode, err, "" if sig == signal.SIGINT else " (SIGTERM)")
    assert json.loads((project / "imports" / "early.json").read_text())["imported"] == ["early-word-count"]


def test_ctrl_c_while_a_solution_runs_ends_it_and_keeps_nothing(bare: Path, tmp_path: Path) -> None:
    """Stopped while the first task's solution runs in staging (.cache/import/<name>/, made by
    this import): the solution is ended instead of waited for, and no staging folder stays."""
    project = _copy(bare, tmp_path)
    before = _tree(project)
    temp = tmp_path / "temp"
    proc = _import(project, _dataset(tmp_path / "data", solve=SOLVES_NEVER), temp, "--name", "slow")
    _until(proc, lambda: bool(files_named(temp, "solving")))
    assert (project / ".cache" / "import" / "slow" / "slow-word-count" / "scenario.yaml").is_file()
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=300)  # a hang guard: the solution itself never ends
    assert _tree(project) == before, err
    assert sorted(temp.iterdir()) == []
    _said_interrupted(proc.returncode, err, "")


def _imports_is_a_file(project: Path, request: pytest.FixtureRequest) -> None:
    (project / "imports").write_text("not a folder\n", encoding="utf-8")


def _imports_is_full(project: Path, request: pytest.FixtureRequest) -> None:
    request.getfixturevalue("root_mounts")  # root only: skipped with the reason otherwise
    fill(tmpfs(project / "imports", "64k"))


def _own_spec_is_broken(project: Path, request: pytest.FixtureRequest) -> None:
    (project / "specs" / "matrices" / "broken.yaml").write_text(
        "kind: matrix\nid: broken\nagents: [noop]\nnot_a_key: 1\n", encoding="utf-8"
    )


@pytest.mark.parametrize(
    ("setup", "code", "said"),
    [
        pytest.param(_imports_is_a_file, 1, f"assay import: {KEPT}", id="a-bug"),
        pytest.param(_imports_is_full, 74, f"No space left on device; {KEPT}", id="full-disk"),
        pytest.param(
            _own_spec_is_broken,
            2,
            f"(the errors above are not in imported scenarios); {KEPT}",
            id="project-does-not-compile",
        ),
    ],
)
def test_an_import_that_fails_after_staging_keeps_nothing(
    bare: Path,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    setup: Callable[[Path, pytest.FixtureRequest], None],
    code: int,
    said: str,
) -> None:
    """The first import into a project fails after its task was staged, reproduced, moved into
    scenarios/ and its matrix and the oracle agent written (validated too, but for the broken
    spec): none of it stays, and the folders it made (scenarios/, specs/agents/) go with it."""
    project = _copy(bare, tmp_path)
    setup(project, request)
    before = _tree(project)
    temp = tmp_path / "temp"
    proc = _import(project, _dataset(tmp_path / "data"), temp, "--name", "new")
    _out, err = proc.communicate(timeout=300)
    assert _tree(project) == before, err
    assert sorted(temp.iterdir()) == []
    assert proc.returncode == code, err
    assert said in err


def test_a_forced_reimport_whose_task_is_refused_keeps_the_earlier_scenario(
    imported: Path, tmp_path: Path
) -> None:
    """`--force` replaces a scenario with the task's new version only if that version is imported:
    refused by `assay validate` (its tests fail on its own reference), the earlier scenario stays."""
    project = _copy(imported, tmp_path)
    before = _tree(project / "scenarios")
    data = _dataset(tmp_path / "data", tests="def test_never():\n    assert False\n")
    done = assay("--project", project, "import", "harbor", data, "--name", "early", "--force")
    assert done.returncode == 1, done.stderr  # every task refused
    assert "refused 1" in done.stderr, done.stderr
    assert _tree(project / "scenarios") == before
