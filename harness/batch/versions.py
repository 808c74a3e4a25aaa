"""Version comparisons at run time: build each compared version, record which is which.

A matrix with `versions: {baseline: {label, path, build, package}, candidate: {...}}` compiles to
one side per version (`<matrix>@<label>`, jobs carrying `version`), whose tool folder (`path`)
goes first on PATH. Before any trial runs, `prepare` provides each selected version once: its
`build` command (in the project folder; it must produce `path`), or else its `package` (a pip
requirement: a name==version, a wheel, a folder), installed into `.cache/versions/<label>` with
a launcher per script (the compiler makes that folder the PATH entry). It then writes `versions.json` at the root
of the matrix's run tree (`<runs>/<matrix>/versions.json`), so `assay report` draws the
uplift deltas and the control's drift without a flag, and a reader months later can still
tell which way round the comparison went. The run tree nests one level deeper under the
version label: `<runs>/<matrix>/<label>/<scenario>/<agent>/<cell>/trial-NN/`.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from compiler.contract import Job, load_manifest
from harness.artifacts.names import VERSIONS_FILE
from harness.artifacts.store import write_atomic
from harness.errors import AssayError
from harness.sandbox import proc

GENERATED = "generated"
VERSIONS_SCHEMA = 1
BUILD_TIMEOUT_S = 900.0


class VersionError(AssayError):
    """A version could not be built, or the comparison names no baseline and candidate (exit 1)."""


def pair(versions: Mapping[str, Mapping[str, Any]]) -> tuple[str, str]:
    """(baseline label, candidate label): the sides named so, else the two in declared order."""
    names = list(versions)
    if "baseline" in versions and "candidate" in versions:
        base, cand = versions["baseline"], versions["candidate"]
    elif len(names) == 2:
        base, cand = versions[names[0]], versions[names[1]]
    else:
        raise VersionError(
            f"a version comparison needs `baseline:` and `candidate:` (or exactly two versions); got {', '.join(names)}"
        )
    return str(base["label"]), str(cand["label"])


def _comparisons(project: Path, matrices: set[str]) -> dict[str, dict[str, dict[str, Any]]]:
    """matrix id -> its `versions:` (name -> {label, path, package, build}) from the manifest."""
    manifest = load_manifest(project / GENERATED)
    found: dict[str, dict[str, dict[str, Any]]] = {}
    for entry in manifest.matrices.values():
        if entry.matrix in matrices and entry.versions:
            found[entry.matrix] = {k: dict(v) for k, v in entry.versions.items()}
    return found


def install(project: Path, label: str, spec: Mapping[str, Any], *, log: Path) -> None:
    """Install a `package:` version with pip into its folder (`.cache/versions/<label>`), once.

    The distribution goes to `<folder>/.site`; each of its scripts gets a launcher in `<folder>`
    (the PATH entry the compiler gave the cells), which puts `.site` on PYTHONPATH for that tool
    alone. A folder whose `.package` marker names the same spec is reused.
    """
    folder = project / str(spec["path"])
    site, marker, package = folder / ".site", folder / ".package", str(spec["package"])
    if marker.is_file() and marker.read_text(encoding="utf-8") == package and site.is_dir():
        return
    shutil.rmtree(folder, ignore_errors=True)
    log.parent.mkdir(parents=True, exist_ok=True)
    argv = [*_installer(label), "--target", str(site), package]
    done = proc.run(argv, cwd=project, env=_build_env(), timeout_s=BUILD_TIMEOUT_S, log=log)
    if done.exit_code != 0 or done.timed_out:
        raise VersionError(
            f"installing version {label!r} ({package}) failed (exit {done.exit_code}; log: {log})"
        )
    scripts = sorted(p for p in (site / "bin").glob("*") if p.is_file()) if (site / "bin").is_dir() else []
    if not scripts:
        raise VersionError(
            f"version {label!r}: package {package!r} installs no command (no scripts in {site}/bin)"
        )
    for script in scripts:
        launcher = folder / script.name
        launcher.write_text(
            "#!/bin/sh\n"
            f"# {script.name} of {package}, installed by assay for version {label}\n"
            f'PYTHONPATH="{site}${{PYTHONPATH:+:$PYTHONPATH}}" exec "{sys.executable}" "{script}" "$@"\n',
            encoding="utf-8",
        )
        launcher.chmod(0o755)
    marker.write_text(package, encoding="utf-8")


def build(project: Path, label: str, spec: Mapping[str, Any], *, log: Path) -> None:
    """Provide one version: run its `build` command in the project folder, else install its `package`."""
    command = spec.get("build")
    if not command:
        if spec.get("package"):
            install(project, label, spec, log=log)
        return
    log.parent.mkdir(parents=True, exist_ok=True)
    done = proc.run(
        ["sh", "-c", str(command)], cwd=project, env=_build_env(), timeout_s=BUILD_TIMEOUT_S, log=log
    )
    if done.exit_code != 0 or done.timed_out:
        raise VersionError(
            f"building version {label!r} failed (exit {done.exit_code}): {command} (log: {log})"
        )
    path = spec.get("path")
    if path and not (project / str(path)).is_dir():
        raise VersionError(f"building version {label!r} did not produce its path {path!r}: {command}")


def _installer(label: str) -> list[str]:
    """The command that pip-installs into a folder: this interpreter's pip, else uv's (uv makes venvs without pip)."""
    if importlib.util.find_spec("pip") is not None:
        return [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-input",
            "--disable-pip-version-check",
        ]
    uv = shutil.which("uv") or shutil.which("uv", path=str(Path(sys.executable).parent))
    if uv is not None:
        return [uv, "pip", "install", "--quiet", "--python", sys.executable]
    raise VersionError(
        f"installing version {label!r} needs pip or uv: this interpreter ({sys.executable}) has no pip"
        " module and no uv is on PATH (install either)"
    )


def _build_env() -> dict[str, str]:
    """The harness's environment, with its own interpreter first on PATH (`python` in a build command)."""
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR", "VIRTUAL_ENV")}
    env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '/usr/local/bin:/usr/bin:/bin')}"
    return env


def prepare(project: Path, jobs: Sequence[Job], runs_root: Path) -> list[Path]:
    """Build the selected versions and write versions.json per compared matrix; returns the files written.

    Raises:
        VersionError: a build failed, or a comparison's sides cannot be told apart.
    """
    matrices = {j.matrix for j in jobs if j.version}
    if not matrices:
        return []
    written: list[Path] = []
    for matrix, versions in sorted(_comparisons(project, matrices).items()):
        baseline, candidate = pair(versions)
        wanted = {j.version for j in jobs if j.matrix == matrix}
        tree = runs_root / matrix
        for spec in versions.values():
            if spec["label"] in wanted:
                build(project, str(spec["label"]), spec, log=tree / f"build-{spec['label']}.log")
        tree.mkdir(parents=True, exist_ok=True)
        record = {
            "schema_version": VERSIONS_SCHEMA,
            "baseline": baseline,
            "candidate": candidate,
            "versions": {
                str(v["label"]): {k: v[k] for k in sorted(v) if k != "label"} for v in versions.values()
            },
        }
        write_atomic(tree / VERSIONS_FILE, json.dumps(record, indent=2, sort_keys=True) + "\n")
        written.append(tree / VERSIONS_FILE)
    return written
