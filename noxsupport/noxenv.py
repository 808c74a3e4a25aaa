"""The environment machinery of assay's noxfile: not part of the assay package, never installed.

`noxfile.py` puts this folder (and only this folder) on sys.path and imports this module. Two jobs:

- `manifest()`: generated/manifest.json, compiled first (`python -m harness compile`) when it is
  missing or older than any input (specs/, scenarios/, compiler/, the files a level provides).
- `install()` and friends: the python a session runs, nox's own when it already has this checkout
  with what the session needs, else a shared environment under `.nox/` (`make_env`) made once.

Imports only the standard library and nox (packaging lazily), so bare nox can list and run the
sessions before the project is installed. It lives outside the `harness` and `compiler` packages,
and the checkout itself stays off sys.path: `_provides` asks importlib where `harness` comes from
to tell whether nox's interpreter has THIS checkout installed.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parents[1]
"""The checkout: the folder of noxfile.py."""
GENERATED = ROOT / "generated"
MANIFEST = GENERATED / "manifest.json"
WATCHED = ("specs", "scenarios", "compiler")


def _newest(path: Path, limit: float) -> bool:
    """True when anything under path (files and folders) is newer than limit."""
    try:
        with os.scandir(path) as entries:
            for entry in entries:
                if entry.name == "__pycache__":
                    continue
                if entry.stat(follow_symlinks=False).st_mtime > limit:
                    return True
                if entry.is_dir(follow_symlinks=False) and _newest(Path(entry.path), limit):
                    return True
    except FileNotFoundError:
        return False
    return False


def _read() -> dict[str, object]:
    try:
        data: dict[str, object] = json.loads(MANIFEST.read_text(encoding="utf-8"))
        return data
    except (OSError, ValueError):
        return {}


def _stale(data: dict[str, object]) -> bool:
    """Cheap: anything under specs/, scenarios/, compiler/ or any other listed input newer than the manifest."""
    try:
        built = MANIFEST.stat().st_mtime
    except FileNotFoundError:
        return True
    if any(
        _newest(ROOT / d, built) or (ROOT / d).stat().st_mtime > built for d in WATCHED if (ROOT / d).exists()
    ):
        return True
    inputs = data.get("inputs")
    for rel in inputs if isinstance(inputs, dict) else ():
        if rel.split("/", 1)[0] not in WATCHED:  # files a level provides (tool launchers, guides)
            try:
                if (ROOT / rel).stat().st_mtime > built:
                    return True
            except FileNotFoundError:
                return True
    return False


ENVS = ROOT / ".nox"
Runner = Callable[[Sequence[str]], object]


def _uv() -> str | None:
    """A uv binary: on PATH, or the `uv` package beside nox (`pip install nox[uv]`); None without."""
    found = shutil.which("uv")
    if found:
        return found
    try:
        import uv  # type: ignore[import-not-found,unused-ignore]

        return str(uv.find_uv_bin())
    except (ImportError, FileNotFoundError):
        return None


def _stamp(install: Sequence[str]) -> str:
    """What an environment was made from: what was installed (pyproject.toml for the project), this Python."""
    parts = [" ".join(install).encode(), sys.version.encode()]
    if "-e" in install:
        parts.append((ROOT / "pyproject.toml").read_bytes())
    return hashlib.sha256(b"\0".join(parts)).hexdigest()


def _ready(env: Path, install: Sequence[str]) -> bool:
    try:
        done = (env / ".assay-env").read_text(encoding="utf-8") == _stamp(install)
    except OSError:
        return False
    return done and (env / "bin" / "python").exists()


def make_env(name: str, install: Sequence[str], run: Runner) -> Path:
    """The shared environment `.nox/env-<name>` with `install` (pip arguments) in it, made once.

    Made again when what it holds changes (pyproject.toml for the project). A lock keeps two nox
    runs from making the same environment at once; the stamp is written last, so an
    interrupted install is made again, not used.
    """
    env = ENVS / f"env-{name}"
    if _ready(env, install):
        return env
    ENVS.mkdir(exist_ok=True)
    with (ENVS / f"{env.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _ready(env, install):
            return env
        py = str(env / "bin" / "python")
        uv = _uv()
        if uv is not None:
            run([uv, "venv", "--quiet", "--clear", "--python", sys.executable, str(env)])
            run([uv, "pip", "install", "--quiet", "--python", py, *install])
        else:
            run([sys.executable, "-m", "venv", "--clear", str(env)])
            run([py, "-m", "pip", "install", "--quiet", *install])
        marker = "import pathlib, sys; pathlib.Path(sys.argv[1]).write_text(sys.argv[2], encoding='utf-8')"
        run([py, "-c", marker, str(env / ".assay-env"), _stamp(install)])
    return env


def _project_env(extras: Sequence[str], run: Runner) -> Path:
    """The shared environment with this checkout (editable) and its `extras`."""
    return make_env("-".join(extras), ["-e", f".[{','.join(extras)}]"], run)


def _bootstrap(argv: Sequence[str]) -> object:
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False)


def _python() -> str:
    """An interpreter that can import the compiler: nox's own, the shared environment, or a new one.

    On a fresh clone none has the compiler's dependencies, so the first listing makes the shared
    `.nox/env-dev` (the one every session uses next); `nox -l` then lists every session.
    """
    candidates = [sys.executable, *sorted(str(p) for p in ENVS.glob("*/bin/python"))]
    for exe in candidates:
        probe = subprocess.run(
            [exe, "-c", "import pydantic, yaml, cerberus, jinja2"], cwd=ROOT, capture_output=True
        )
        if probe.returncode == 0:
            return exe
    print("nox: installing the project into .nox/env-dev (once) to compile specs/", file=sys.stderr)
    exe = str(_project_env(("dev",), _bootstrap) / "bin" / "python")
    return exe if Path(exe).exists() else sys.executable


def manifest() -> dict[str, object]:
    data = _read()
    if _stale(data) and (ROOT / "specs").is_dir():
        done = subprocess.run(
            [_python(), "-m", "harness", "compile"], cwd=ROOT, capture_output=True, text=True
        )
        if done.returncode != 0:
            print(
                f"nox: `assay compile` failed; bench sessions are not listed:\n{done.stderr.strip()}",
                file=sys.stderr,
            )
        data = _read()
    return data


def _no_venv(session: nox.Session) -> bool:
    """True under `nox --no-venv` (the sessions then run on nox's own interpreter)."""
    config = getattr(getattr(session, "_runner", None), "global_config", None)
    return bool(getattr(config, "no_venv", False)) or getattr(config, "force_venv_backend", None) == "none"


def _provides(needs: Sequence[str]) -> bool:
    """True when nox's own interpreter has this checkout installed with every requirement of
    `needs` (its extras): the README's first line installs it so, and a session then needs no
    environment of its own."""
    try:
        from importlib import metadata

        from packaging.requirements import Requirement

        origin = importlib.util.find_spec("harness")
        requires = metadata.requires("assay") or []
    except (ImportError, ValueError, metadata.PackageNotFoundError):
        return False
    if origin is None or origin.origin is None or Path(origin.origin).resolve().parents[1] != ROOT:
        return False
    for line in requires:
        req = Requirement(line)
        if req.marker is not None and not any(req.marker.evaluate({"extra": e}) for e in ("", *needs)):
            continue
        try:
            if not req.specifier.contains(metadata.version(req.name), prereleases=True):
                return False
        except metadata.PackageNotFoundError:
            return False
    return True


def install(
    session: nox.Session,
    needs: Sequence[str] = ("dev",),
    *,
    extras: Sequence[str] = ("dev",),
    own: bool = True,
) -> str:
    """The python a session runs: nox's own when it already has this checkout and what `needs`
    (and `own` allows it), else that of the shared environment with `extras` (made on first use).
    Under `nox --no-venv` always nox's own.

    Sessions write bytecode even where PYTHONDONTWRITEBYTECODE is set (some machines set it for
    every shell): uv installs none, so every Python start of a session (the CLI, the grader's
    server with pytest) compiled its modules from source again."""
    session.env["PYTHONDONTWRITEBYTECODE"] = ""  # empty means unset to Python
    if _no_venv(session) or (own and _provides(needs)):
        return sys.executable
    return _env_python(session, _project_env(extras, installer(session)))


def installer(session: nox.Session) -> Runner:
    def run(argv: Sequence[str]) -> object:
        return session.run_install(*argv, external=True, silent=True)

    return run


def _env_python(session: nox.Session, env: Path) -> str:
    """The environment's python, its tools first on PATH (as in a session's own venv)."""
    session.env["VIRTUAL_ENV"] = str(env)
    session.env["PATH"] = os.pathsep.join([str(env / "bin"), os.environ.get("PATH", os.defpath)])
    return str(env / "bin" / "python")


EXAMPLE = ("example",)
"""What a run of the embedded example suite needs: its tool under test (ruff) and its pytest checks.
The README's demo line installs them beside assay, so those sessions then run on nox's own
interpreter; else they use the shared `.nox/env-dev`, which has them too."""


def example(session: nox.Session) -> str:
    """The python of a session that runs the example suite (validate, demo, bench-*)."""
    return install(session, EXAMPLE)


def runtime(session: nox.Session) -> str:
    """The python of a session that needs only assay itself: no test or lint tools, and no run of
    the example suite (its tool under test, ruff, and its pytest checks come with `dev`)."""
    return install(session, ())
