"""A scenario's sandbox: where its workspace appears, other folders at absolute paths, what is installed.

`workdir: /app` puts the workspace at /app for the agent, the checks and `assay validate`; `mounts`
show other folders of the scenario at absolute paths (read-only, writable per trial, or hidden from
the agent: a suite's tests); `environment` names an interpreter and packages built once into a
cached environment; `env` and `limits` complete what a Dockerfile and a task file say. Paths inside
the sandbox are absolute, normalised, and never one of the toolchain's own folders.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

from compiler.contract import SANDBOX_RESERVED, CheckSpec, Environment, ScenarioLimits, ScenarioMount, within
from compiler.errors import Collector
from compiler.load import Sources
from compiler.paths import rel_path
from compiler.specs import ScenarioDoc
from compiler.specs.scenario import MountDoc
from compiler.yamlio import Doc, Path_, dotted

PYTHON_VERSION = re.compile(r"^3\.\d{1,2}$")


@dataclass(frozen=True)
class SandboxFields:
    """The validated sandbox fields of one scenario, in their job form."""

    workdir: str | None
    mounts: tuple[ScenarioMount, ...]
    environment: Environment | None
    env: dict[str, str]
    limits: ScenarioLimits | None


def sandbox_path(c: Collector, doc: Doc, path: Path_, value: str) -> bool:
    """An absolute, normalised path inside the sandbox, outside the toolchain's folders."""
    if not value.startswith("/") or posixpath.normpath(value) != value or value == "/":
        c.add(
            doc.loc(path),
            dotted(path),
            "E215",
            f"sandbox path {value!r} must be absolute and normalised (like /app), and not /",
        )
        return False
    hit = next((r for r in SANDBOX_RESERVED if within(value, r)), None)
    if hit is not None:
        c.add(
            doc.loc(path),
            dotted(path),
            "E215",
            f"sandbox path {value!r} is inside {hit}, which the sandbox's toolchain owns",
            "pick another folder, e.g. /app or /data",
        )
        return False
    return True


def _mounts(
    c: Collector, doc: Doc, spec: ScenarioDoc, src: Sources, workdir: str | None
) -> list[ScenarioMount]:
    mounts: list[ScenarioMount] = []
    seen: list[str] = [workdir] if workdir else []
    for i, m in enumerate(spec.mounts or []):
        base: Path_ = ("mounts", i)
        if not sandbox_path(c, doc, (*base, "path"), m.path):
            continue
        clash = next((p for p in seen if within(m.path, p) or within(p, m.path)), None)
        if clash is not None:
            c.add(
                doc.loc((*base, "path")),
                dotted((*base, "path")),
                "E216",
                f"mount {m.path!r} overlaps {clash!r}" + (" (the workdir)" if clash == workdir else ""),
                "mounts and the workdir are separate folders; put a file the workspace needs in seed/",
            )
            continue
        seen.append(m.path)
        source = rel_path(c, doc, (*base, "from"), m.from_)
        if source is None:
            continue
        if not src.inputs.under(source):
            c.add(
                doc.loc((*base, "from")),
                dotted((*base, "from")),
                "E238",
                f"mount folder '{source}/' is missing or empty",
                "add at least one file (a .gitkeep will do)",
            )
            continue
        reference = _mount_reference(c, doc, src, base, m)
        mounts.append(
            ScenarioMount(
                path=m.path,
                source=source,
                writable=bool(m.writable),
                hidden=bool(m.hidden),
                reference=reference,
            )
        )
        if m.writable and m.hidden:
            c.add(
                doc.loc((*base, "hidden")),
                dotted((*base, "hidden")),
                "E100",
                "a hidden mount is for the checks only; it cannot also be writable",
            )
    return mounts


def _mount_reference(c: Collector, doc: Doc, src: Sources, base: Path_, m: MountDoc) -> str | None:
    """A writable mount's reference overlay, project-relative (None: none, or an error added)."""
    if m.reference is None:
        return None
    where = (*base, "reference")
    folder = rel_path(c, doc, where, m.reference)
    if folder is None:
        return None
    if not m.writable:
        c.add(
            doc.loc(where),
            dotted(where),
            "E100",
            "only a writable mount has a reference: the agent cannot change a read-only one",
        )
        return None
    if not src.inputs.under(folder):
        c.add(
            doc.loc(where), dotted(where), "E238", f"mount reference folder '{folder}/' is missing or empty"
        )
        return None
    return folder


def _environment(c: Collector, doc: Doc, spec: ScenarioDoc) -> Environment | None:
    env = spec.environment
    if env is None:
        return None
    if env.python is not None and not PYTHON_VERSION.match(env.python):
        c.add(
            doc.loc(("environment", "python")),
            "environment.python",
            "E104",
            f"python {env.python!r} is not a version like '3.12'",
        )
    for key in ("pip", "apt"):
        for j, item in enumerate(getattr(env, key) or []):
            if not item.strip() or item.strip().startswith("-"):
                c.add(
                    doc.loc(("environment", key, j)),
                    f"environment.{key}[{j}]",
                    "E104",
                    f"{item!r} is not a package (options are not accepted here)",
                )
    return Environment(python=env.python, pip=tuple(env.pip or ()), apt=tuple(env.apt or ()))


def _limits(c: Collector, doc: Doc, spec: ScenarioDoc) -> ScenarioLimits | None:
    lim = spec.limits
    if lim is None:
        return None
    for key in ("timeout_s", "cpus", "memory_mb"):
        value = getattr(lim, key)
        if value is not None and value <= 0:
            c.add(doc.loc(("limits", key)), f"limits.{key}", "E104", f"{key} must be positive")
    return ScenarioLimits(timeout_s=lim.timeout_s, cpus=lim.cpus, memory_mb=lim.memory_mb)


def resolve(c: Collector, doc: Doc, spec: ScenarioDoc, src: Sources) -> SandboxFields:
    """The scenario's workdir, mounts, environment, env and limits (errors collected in `c`)."""
    workdir = spec.workdir
    if workdir is not None and not sandbox_path(c, doc, ("workdir",), workdir):
        workdir = None
    return SandboxFields(
        workdir=workdir,
        mounts=tuple(_mounts(c, doc, spec, src, workdir)),
        environment=_environment(c, doc, spec),
        env=dict(spec.env or {}),
        limits=_limits(c, doc, spec),
    )


def check_paths(
    c: Collector, doc: Doc, check_paths: list[Path_], checks: list[CheckSpec], spec: ScenarioDoc
) -> None:
    """Absolute paths a `pytest` check names (tests, cwd) must be ones the scenario provides (its
    workdir and mounts as written: a bad one is reported once, where it is written)."""
    provided = [p for p in (spec.workdir, *(m.path for m in spec.mounts or [])) if p]
    for path, chk in zip(check_paths, checks, strict=True):
        if chk.kind != "pytest":
            continue
        tests = chk.params.get("tests")
        named: list[tuple[Path_, object]] = (
            [(("tests", j), t) for j, t in enumerate(tests)]
            if isinstance(tests, list)
            else [(("tests",), tests)]
        )
        named.append((("cwd",), chk.params.get("cwd")))
        for key, value in named:
            if (
                isinstance(value, str)
                and value.startswith("/")
                and not any(within(value, p) for p in provided)
            ):
                c.add(
                    doc.loc((*path, *key)),
                    dotted((*path, *key)),
                    "E215",
                    f"{value!r} is not inside the workdir or a mount of this scenario",
                    f"the sandbox shows: {', '.join(provided)}"
                    if provided
                    else "give a `workdir:` or a `mounts:` entry",
                )


def clamp(matrix: float | None, scenario: float | None) -> float | None:
    """A scenario's limit within the matrix's: the smaller of the two; either alone when the other is unset."""
    if matrix is None:
        return scenario
    if scenario is None:
        return matrix
    return min(matrix, scenario)
