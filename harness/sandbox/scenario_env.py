"""Scenario environments: the interpreter and packages a scenario needs, built once, used offline.

A scenario's `environment: {python: "3.13", pip: [...], apt: [...]}` is built into
`<project>/.cache/envs/<key>/` the first time a trial, a validation or an import needs it (under a
lock, so parallel trials build it once), then only read: the agent and the checks both get its
`venv/bin` (and the `bin` folders of the Debian packages it unpacked) first on PATH, with the
folders mounted read-only, and the network stays off. The key hashes the interpreter and the
package lists, so a changed requirement builds a new environment and never mutates one in use.

The interpreter must be one this machine has: `python3.X` on PATH, a pyenv or uv managed one, or
the system's. When none is found — or Debian packages are missing and cannot be fetched — the
error says so before any trial runs ("cannot run here"), never as an agent failure.
Debian packages already installed on the machine are used as they are (the sandbox shows /usr);
others are downloaded with their missing dependencies (`apt-get install --download-only`, which
needs root) and unpacked with `dpkg -x` into the environment.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from compiler.contract import Environment
from harness.errors import AssayError

ENVS_DIR = Path(".cache") / "envs"
READY = "ready.json"
INSTALL_TIMEOUT_S = 1800.0
PROBE = "import json, sys; print(json.dumps([sys.version.split()[0], sys.executable, sys.base_prefix]))"


class CannotRunHere(AssayError):
    """A scenario needs something this machine cannot provide (exit 2, before any trial)."""

    exit_code = 2


@dataclass(frozen=True)
class Interpreter:
    """A Python interpreter on this machine."""

    version: str
    executable: Path
    prefix: Path
    """Its installation (sys.base_prefix), shown read-only in the sandbox."""


@dataclass(frozen=True)
class ScenarioEnv:
    """A built environment: what goes on PATH and what the sandbox must show read-only."""

    root: Path
    interpreter: Interpreter
    bin_dirs: tuple[Path, ...]
    lib_dirs: tuple[Path, ...]

    @property
    def python(self) -> Path:
        return self.root / "venv" / "bin" / "python"

    @property
    def read_only(self) -> tuple[Path, ...]:
        """Folders the sandbox shows at their own paths (the venv names its interpreter by path)."""
        return (self.root, self.interpreter.prefix)

    def path(self, rest: str) -> str:
        """A PATH with this environment's folders before `rest`."""
        return os.pathsep.join([*(str(b) for b in self.bin_dirs), rest])

    def variables(self, base: dict[str, str]) -> dict[str, str]:
        """`base` with PATH (and LD_LIBRARY_PATH for unpacked libraries) pointing into the environment."""
        env = dict(base)
        env["PATH"] = self.path(env.get("PATH", os.defpath))
        env["VIRTUAL_ENV"] = str(self.root / "venv")
        if self.lib_dirs:
            env["LD_LIBRARY_PATH"] = os.pathsep.join(
                [
                    *(str(d) for d in self.lib_dirs),
                    *([env["LD_LIBRARY_PATH"]] if env.get("LD_LIBRARY_PATH") else []),
                ]
            )
        return env


def _probe(executable: Path) -> Interpreter | None:
    try:
        done = subprocess.run(
            [str(executable), "-c", PROBE], capture_output=True, text=True, timeout=30, check=False
        )
        version, exe, prefix = json.loads(done.stdout)
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return None
    return Interpreter(version=version, executable=Path(exe).resolve(), prefix=Path(prefix).resolve())


def _candidates(version: str) -> Iterator[Path]:
    name = f"python{version}"
    home = Path.home()
    shims = {str(home / ".pyenv" / "shims")}
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        if folder and folder not in shims and (Path(folder) / name).is_file():
            yield Path(folder) / name
    roots = [
        Path(os.environ.get("PYENV_ROOT", home / ".pyenv")) / "versions",
        home / ".local/share/uv/python",
    ]
    for root in roots:
        if root.is_dir():
            for inst in sorted(root.iterdir(), reverse=True):
                if (inst / "bin" / name).is_file():
                    yield inst / "bin" / name
    for folder in ("/usr/local/bin", "/usr/bin"):
        if (Path(folder) / name).is_file():
            yield Path(folder) / name


@functools.cache
def find_interpreter(version: str | None) -> Interpreter:
    """The interpreter of a major.minor version (None: the one assay runs on), or CannotRunHere."""
    if version is None:
        own = _probe(Path(getattr(sys, "_base_executable", sys.executable)))
        if own is None:
            raise CannotRunHere("cannot run here: the interpreter assay runs on does not answer")
        return own
    tried: list[str] = []
    for exe in _candidates(version):
        found = _probe(exe)
        tried.append(str(exe))
        if found is not None and found.version.rsplit(".", 1)[0] == version:
            return found
    raise CannotRunHere(
        f"cannot run here: python {version} is not installed on this machine"
        + (f" (tried {', '.join(tried)})" if tried else " (no python" + version + " on PATH, in pyenv or uv)")
        + f"; install it (e.g. `uv python install {version}`) or run the scenario elsewhere"
    )


def key(environment: Environment, interpreter: Interpreter) -> str:
    """The cache key of an environment: the interpreter and the package lists."""
    spec = {
        "python": [interpreter.version, str(interpreter.executable)],
        "pip": sorted(environment.pip),
        "apt": sorted(environment.apt),
        "machine": platform.machine(),
    }
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:20]


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _run(argv: list[str], log: Path, what: str) -> None:
    with log.open("a", encoding="utf-8") as out:
        out.write(f"$ {' '.join(argv)}\n")
        out.flush()
        try:
            done = subprocess.run(
                argv, stdout=out, stderr=subprocess.STDOUT, timeout=INSTALL_TIMEOUT_S, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise CannotRunHere(f"cannot run here: {what} failed ({exc}); see {log}") from None
    if done.returncode != 0:
        tail = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-5:]
        raise CannotRunHere(
            f"cannot run here: {what} failed (exit {done.returncode}): {' | '.join(tail)}; see {log}"
        )


def deb_installed(package: str) -> bool:
    """The Debian package is installed on this machine."""
    try:
        done = subprocess.run(
            ["dpkg-query", "-W", "-f=${Status}", package],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and done.stdout.strip().endswith("installed")


def _apt(packages: tuple[str, ...], root: Path, log: Path) -> None:
    missing = [p for p in packages if not deb_installed(p)]
    if not missing:
        return
    if shutil.which("apt-get") is None or shutil.which("dpkg") is None:
        raise CannotRunHere(
            f"cannot run here: Debian packages {', '.join(missing)} are missing and there is no apt-get"
        )
    if os.geteuid() != 0:
        raise CannotRunHere(
            f"cannot run here: Debian packages {', '.join(missing)} are missing; install them, or build the "
            "environment as root (apt-get downloads them with their dependencies)"
        )
    debs = root / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    _run(
        [
            "apt-get",
            "install",
            "-y",
            "--download-only",
            "--no-install-recommends",
            f"-o=Dir::Cache::archives={debs}",
            *missing,
        ],
        log,
        f"downloading Debian packages {', '.join(missing)}",
    )
    for deb in sorted(debs.glob("*.deb")):
        _run(["dpkg", "-x", str(deb), str(root / "root")], log, f"unpacking {deb.name}")
    shutil.rmtree(debs, ignore_errors=True)


def _paths(root: Path) -> tuple[tuple[Path, ...], tuple[Path, ...]]:
    unpacked = root / "root"
    bins = [root / "venv" / "bin"] + [
        unpacked / b for b in ("usr/local/bin", "usr/bin", "bin") if (unpacked / b).is_dir()
    ]
    arch = f"{platform.machine()}-linux-gnu"
    libs = [unpacked / d for d in (f"usr/lib/{arch}", f"lib/{arch}", "usr/lib") if (unpacked / d).is_dir()]
    return tuple(bins), tuple(libs)


def ensure(environment: Environment, project: Path) -> ScenarioEnv:
    """The built environment (building it now, once, when it is not ready yet)."""
    interpreter = find_interpreter(environment.python)
    root = (project / ENVS_DIR / key(environment, interpreter)).resolve()
    with _locked(root.with_suffix(".lock")):
        if not (root / READY).is_file():
            shutil.rmtree(root, ignore_errors=True)
            root.mkdir(parents=True)
            log = root / "build.log"
            try:
                _run(
                    [str(interpreter.executable), "-m", "venv", str(root / "venv")], log, "creating the venv"
                )
                if environment.pip:
                    _run(
                        [
                            str(root / "venv" / "bin" / "python"),
                            "-m",
                            "pip",
                            "install",
                            "--disable-pip-version-check",
                            "--no-input",
                            *environment.pip,
                        ],
                        log,
                        f"installing {' '.join(environment.pip)}",
                    )
                _apt(environment.apt, root, log)
            except BaseException:
                (root / READY).unlink(missing_ok=True)
                raise
            spec = {"python": interpreter.version, "pip": list(environment.pip), "apt": list(environment.apt)}
            (root / READY).write_text(
                json.dumps({**spec, "built_at": time.time()}, indent=1) + "\n", encoding="utf-8"
            )
    bins, libs = _paths(root)
    return ScenarioEnv(root=root, interpreter=interpreter, bin_dirs=bins, lib_dirs=libs)
