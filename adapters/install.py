"""Install agent CLIs into a cache folder, once per (package, version), never per trial.

Each CLI adapter declares its `Package` (manager, package name, pinned version, binary); this
module only performs installs. Layout: `<cache>/<package>-<version>/` holding
`node_modules/.bin/<bin>` (npm) or `venv/bin/<bin>` (pip), and `installed.json` written last,
so a half-finished install never looks finished. Concurrent installers of the same package
wait on a lock file.

    python -m adapters.install claude_code codex aider mini_swe_agent [--cache DIR]
    python -m adapters.install --all            # every built-in adapter that runs a CLI

The cache defaults to `$ASSAY_AGENT_CACHE` or `<project>/.cache/agents`; adapters find CLIs
there through `BENCH_AGENT_CACHE`.
"""

from __future__ import annotations

import argparse
import fcntl
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

ROOT = Path(__file__).resolve().parents[1]


class InstallError(Exception):
    """An install that failed or a package that cannot be installed."""


@dataclass(frozen=True)
class Package:
    """Where an agent CLI comes from; each CLI adapter declares its own."""

    manager: Literal["npm", "pip"]
    name: str
    version: str
    """The version the adapter was driven end to end with (installs are pinned)."""
    bin: str
    """The CLI's executable name."""


class Installed(BaseModel):
    """`installed.json`: one finished install."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    manager: Literal["npm", "pip"]
    """Package manager used."""
    package: str
    """Package name."""
    version: str
    """Version requested."""
    installed_version: str
    """Version the package manager actually installed (read back from its metadata)."""
    bin: str
    """Absolute path of the CLI."""


def known() -> dict[str, Package]:
    """The built-in adapters that run an installable CLI, by short name."""
    import adapters

    found: dict[str, Package] = {}
    for name in adapters.__all__:
        adapter = getattr(importlib.import_module(f"adapters.{name}"), "ADAPTER", None)
        if adapter is not None:
            found[name] = adapter.cli.package
    return found


def default_cache() -> Path:
    """`$ASSAY_AGENT_CACHE` or `<project>/.cache/agents`."""
    return Path(os.environ.get("ASSAY_AGENT_CACHE", ROOT / ".cache" / "agents"))


def dir_name(package: str, version: str) -> str:
    """`@scope/name` + version -> `scope-name-version`, the folder adapters look the CLI up in."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", package.lstrip("@")) + f"-{version}"


def package_for(adapter: str, args: dict[str, Any]) -> Package:
    """The package of an agent spec: the adapter's own, overridden by args `package`,
    `version`, `installer` (npm|pip) and `bin_name`."""
    base = known().get(adapter)
    if base is None and "package" not in args:
        raise InstallError(
            f"adapter {adapter!r} has no known package; set args.package and "
            f"args.installer (known: {', '.join(sorted(known()))})"
        )
    manager = args.get("installer") or (base.manager if base else "npm")
    if manager not in ("npm", "pip"):
        raise InstallError(f"installer must be npm or pip, not {manager!r}")
    return Package(
        manager,
        str(args.get("package") or (base.name if base else "")),
        str(args.get("version") or (base.version if base else "")),
        str(args.get("bin_name") or (base.bin if base else args["package"])),
    )


def _run(argv: list[str], log: Path) -> None:
    with log.open("a", encoding="utf-8") as fh:
        fh.write("$ " + " ".join(argv) + "\n")
        fh.flush()
        done = subprocess.run(argv, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        tail = log.read_text(encoding="utf-8", errors="replace")[-1500:]
        raise InstallError(f"{argv[0]} failed with exit {done.returncode}:\n{tail}")


def _installed_version(pkg: Package, folder: Path) -> str:
    if pkg.manager == "npm":
        meta = folder / "node_modules" / pkg.name / "package.json"
        return str(json.loads(meta.read_text(encoding="utf-8"))["version"])
    code = f"import importlib.metadata as m; print(m.version({pkg.name!r}))"
    python = folder / "venv" / "bin" / "python"
    return subprocess.run(
        [str(python), "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()


def _install_into(pkg: Package, folder: Path, log: Path) -> Path:
    """Run the package manager; return the CLI's path."""
    if pkg.manager == "npm":
        npm = shutil.which("npm")
        if npm is None:
            raise InstallError("npm is not on PATH (needed for npm-packaged agents)")
        spec = f"{pkg.name}@{pkg.version}"
        _run([npm, "install", "--no-fund", "--no-audit", "--prefix", str(folder), spec], log)
        return folder / "node_modules" / ".bin" / pkg.bin
    venv = folder / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], log)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    _run([*pip, f"{pkg.name}=={pkg.version}"], log)
    return venv / "bin" / pkg.bin


def install(pkg: Package, cache: Path | None = None) -> Installed:
    """Install `pkg` into the cache unless it is there already; return what is installed."""
    if not pkg.version:
        raise InstallError(f"{pkg.name}: pin a version (args.version); installs are cached by version")
    cache = cache or default_cache()
    cache.mkdir(parents=True, exist_ok=True)
    folder = cache / dir_name(pkg.name, pkg.version)
    marker = folder / "installed.json"
    with (cache / f".{folder.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.is_file():
            return Installed.model_validate_json(marker.read_text(encoding="utf-8"))
        if folder.exists():
            shutil.rmtree(folder)  # an unfinished earlier attempt
        folder.mkdir(parents=True)
        binary = _install_into(pkg, folder, folder / "install.log")
        if not binary.exists():
            raise InstallError(f"{pkg.name}@{pkg.version} installed but {binary} is missing")
        done = Installed(
            manager=pkg.manager,
            package=pkg.name,
            version=pkg.version,
            installed_version=_installed_version(pkg, folder),
            bin=str(binary),
        )
        tmp = marker.with_name("installed.json.tmp")
        tmp.write_text(done.model_dump_json(indent=2) + "\n", encoding="utf-8")
        tmp.replace(marker)
        return done


def main(argv: list[str] | None = None) -> int:
    """`python -m adapters.install ADAPTER... | --all [--cache DIR] [--version V]`."""
    parser = argparse.ArgumentParser(
        prog="python -m adapters.install",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("adapters", nargs="*", help=f"built-in adapters: {', '.join(known())}")
    parser.add_argument("--all", action="store_true", help="every built-in adapter that runs a CLI")
    parser.add_argument("--cache", type=Path, default=None, help="cache folder")
    parser.add_argument("--version", default=None, help="override the pinned version (one adapter)")
    args = parser.parse_args(argv)
    if args.all == bool(args.adapters):
        parser.error("name the adapters to install, or --all")
    if args.all and args.version:
        parser.error("--version overrides one adapter's pin, not --all's")
    try:
        for name in sorted(known()) if args.all else args.adapters:
            pkg = package_for(name, {})
            if args.version:
                pkg = replace(pkg, version=args.version)
            done = install(pkg, args.cache)
            print(f"{name}: {done.package} {done.installed_version} -> {done.bin}")
    except InstallError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
