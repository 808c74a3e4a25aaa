"""One task of another harness's format, read into what an assay scenario needs (or refused).

Both readers (`terminal_bench`, `harbor`) fill a `Task`; `seed_plan` turns its Dockerfile copies
into the seed (files under the working directory) and mounts (files copied elsewhere, shown at
the same absolute path), and `requirements` merges what the image, the tests and the solution
install into one environment. A task with `refusals` is never written.
"""

from __future__ import annotations

import glob
import math
import posixpath
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compiler.contract import SANDBOX_RESERVED, within
from harness.importers.dockerfile import Build
from harness.importers.scripts import TEST_DIR, SolutionNeeds, TestPlan, read_solution, read_tests
from harness.importers.shellsteps import package_name

HEAVY = (
    frozenset(
        {"torch", "torchvision", "torchaudio", "tensorflow", "tensorflow-cpu", "keras", "jax", "jaxlib"}
    )
    | frozenset({"flax", "transformers", "accelerate", "sentence-transformers", "mteb", "onnx2torch", "timm"})
    | frozenset({"lightning", "pytorch-lightning", "xformers", "vllm", "diffusers", "deepspeed", "triton"})
    | frozenset({"bitsandbytes", "peft", "trl", "spacy", "ultralytics", "segment-anything", "pystan"})
    | frozenset({"cmdstanpy"})
)
"""Packages an import never installs: a machine-learning framework (gigabytes; installing one can
take a shared machine down), a package that pulls one in, or one that compiles a toolchain."""
HEAVY_IMPORT = re.compile(
    r"^\s*(?:import|from)\s+(torch|torchvision|torchaudio|tensorflow|keras|jax|flax|transformers"
    r"|accelerate|sentence_transformers|mteb|timm|lightning|pytorch_lightning|diffusers|spacy|stan)\b",
    re.MULTILINE,
)
SCANNED = (".py", ".sh", ".ipynb")
"""Files of a task whose imports are read (the tests, the solution, the image's files)."""
LOCAL_SERVER = re.compile(r"\b(?:localhost|127\.0\.0\.1|0\.0\.0\.0)\b")
"""A test that names a local address talks to a server running beside it."""
SCRIPT_BLOCK = re.compile(r"(?m)^# /// script[ \t]*\n((?:^#(?:[ \t].*)?\n)*?)^# ///[ \t]*$")
"""Inline script metadata (PEP 723): the packages `uv run script.py` installs for the script."""
UV_RUN_SCRIPT = re.compile(r"(?:^|[\s;&|(])(?:\S*/)?uv\s+run\s+(?:-\S+\s+)*(?:python3?\s+)?(\S+\.py)\b")


def slug(text: str) -> str:
    """A scenario id from a task's name: lowercase, runs of other characters as one '-'."""
    return re.sub(r"[^a-z0-9_+]+", "-", text.lower()).strip("-_.+") or "task"


@dataclass
class Task:
    """A task read from its folder."""

    format: str
    """`terminal-bench` or `harbor`."""
    name: str
    """The task's own name (its folder, or Harbor's `task.name`)."""
    id: str
    root: Path
    context: Path
    """The Dockerfile's build context."""
    instruction: str = ""
    build: Build = field(default_factory=Build)
    tests: TestPlan = field(default_factory=TestPlan)
    tests_dir: Path | None = None
    solution: Path | None = None
    """The solution script."""
    solution_dir: Path | None = None
    """Harbor's solution/ folder, shown at /solution while the solution runs."""
    solution_needs: SolutionNeeds = field(default_factory=SolutionNeeds)
    env: dict[str, str] = field(default_factory=dict)
    check_env: dict[str, str] = field(default_factory=dict)
    solution_env: dict[str, str] = field(default_factory=dict)
    timeout_s: float | None = None
    check_timeout_s: float | None = None
    cpus: float | None = None
    memory_mb: int | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    refusals: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def workdir(self) -> str:
        return self.build.workdir or "/"

    def refuse(self, reason: str) -> None:
        if reason not in self.refusals:
            self.refusals.append(reason)


def memory_mb(value: object, *, bare: str = "m") -> int | None:
    """Megabytes from a memory size as compose (`mem_limit: 2g`, bytes when bare) and Harbor's
    older `memory = "4G"` write it; `bare` is the unit of a bare number. None when it is not one."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([gGmMkKbB]?)[iI]?[bB]?", str(value).strip())
    if not m:
        return None
    scale = {"g": 1024.0, "m": 1.0, "k": 1 / 1024, "b": 1 / 1024**2}[(m.group(2) or bare).lower()]
    return max(1, round(float(m.group(1)) * scale))


def requirements(task: Task) -> list[str]:
    """pip requirements of the environment: the image's, then the tests', then the solution's; the
    first one to name a package wins (the agent's image decides a version the tests pin differently)."""
    out: list[str] = []
    seen: dict[str, str] = {}
    for source, reqs in (
        ("image", task.build.packages.pip),
        ("tests", task.tests.packages.pip),
        ("solution", task.solution_needs.pip),
    ):
        for req in reqs:
            name = package_name(req)
            if name in ("pip", "setuptools", "wheel", "uv"):
                continue
            if name in seen:
                if seen[name] != req and source != "solution":
                    task.notes.append(f"{source} asks for {req}; the environment keeps {seen[name]}")
                continue
            seen[name] = req
            out.append(req)
    if "pytest" not in seen:
        out.append("pytest")
    return out


def seconds(task: Task, value: object, field_name: str) -> float | None:
    """A time limit of the task's: a finite number of seconds above 0; anything else (`.inf`, -5,
    true) is a refusal naming the field, never a trial that cannot time out. None when unset."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
        task.refuse(f"{field_name} is {value!r}: a time limit is a finite number of seconds above 0")
        return None
    return float(value)


def finish(task: Task) -> None:
    """What the task needs and why it cannot be imported, once all of it is read."""
    take_script_packages(task)
    check_servers(task)
    check_heavy(task)


def script_packages(text: str) -> list[str]:
    """The `dependencies` of a script's inline metadata (PEP 723); [] without a block."""
    m = SCRIPT_BLOCK.search(text)
    if not m:
        return []
    body = "\n".join(line[2:] if line.startswith("# ") else line[1:] for line in m.group(1).splitlines())
    try:
        deps = tomllib.loads(body).get("dependencies", [])
    except tomllib.TOMLDecodeError:
        return []
    return [str(d) for d in deps] if isinstance(deps, list) else []


def take_script_packages(task: Task) -> None:
    """A build step's `uv run script.py` installs the script's inline dependencies first: they
    join the environment (the step then runs with the environment's python)."""
    files = {p.dest: p.src for p in placed_files(task)}
    for step in task.build.steps:
        for name in UV_RUN_SCRIPT.findall(step.script):
            src = files.get(posixpath.normpath(posixpath.join(step.workdir, name)))
            if src is None:
                continue
            for req in script_packages(src.read_text(encoding="utf-8", errors="replace")):
                if req not in task.build.packages.pip:
                    task.build.packages.pip.append(req)


def check_servers(task: Task) -> None:
    """Refuse a task whose tests talk to a server its solution leaves running: a check sees the
    files the agent left, never the processes it started."""
    if not task.solution_needs.background or task.tests_dir is None:
        return
    for path in sorted(task.tests_dir.rglob("*.py")):
        if LOCAL_SERVER.search(path.read_text(encoding="utf-8", errors="replace")):
            started = task.solution_needs.background[0][:100]
            task.refuse(
                f"the tests talk to a server the solution leaves running ({started}): a check sees the"
                " files the agent left, not the processes it started"
            )
            return


def check_heavy(task: Task) -> None:
    """Refuse a task that names or imports a heavy package (HEAVY): it is never installed here."""
    for source, reqs in (
        ("the image", task.build.packages.pip),
        ("the test script", task.tests.packages.pip),
        ("the solution", task.solution_needs.pip),
    ):
        heavy = [r for r in reqs if package_name(r) in HEAVY]
        if heavy:
            task.refuse(
                f"{source} installs {', '.join(heavy)}: heavy packages are never installed by an import"
            )
    for path in sorted(task.root.rglob("*")):
        if path.suffix not in SCANNED or not path.is_file() or path.stat().st_size > 1_000_000:
            continue
        m = HEAVY_IMPORT.search(path.read_text(encoding="utf-8", errors="replace"))
        if m:
            rel = path.relative_to(task.root).as_posix()
            task.refuse(f"{rel} imports {m.group(1)}: heavy packages are never installed by an import")
            return


@dataclass(frozen=True)
class Placed:
    """One file of the task, where the scenario puts it."""

    src: Path
    dest: str
    """Absolute path inside the sandbox."""


def _sources(task: Task, pattern: str) -> list[Path]:
    base = task.context.resolve()
    matches = (
        sorted(glob.glob(str(base / pattern))) if any(c in pattern for c in "*?[") else [str(base / pattern)]
    )
    found = []
    for m in matches:
        path = Path(m).resolve()
        if not path.is_relative_to(base) or not path.exists():
            task.refuse(f"COPY source {pattern!r} is not in the build context")
            return []
        found.append(path)
    return found


def placed_files(task: Task) -> list[Placed]:
    """Every file the Dockerfile's COPY lines put into the image, by absolute destination."""
    out: dict[str, Placed] = {}
    for copy in task.build.copies:
        for pattern in copy.sources:
            for src in _sources(task, pattern):
                into_dir = copy.dest.endswith("/") or src.is_dir() or len(copy.sources) > 1
                dest = copy.dest.rstrip("/") or "/"
                if src.is_dir():
                    for f in sorted(p for p in src.rglob("*") if p.is_file()):
                        target = posixpath.join(dest, f.relative_to(src).as_posix())
                        out[target] = Placed(f, target)
                else:
                    target = posixpath.join(dest, src.name) if into_dir else dest
                    out[target] = Placed(src, target)
    for removed in task.build.removed:
        for key in [k for k in out if k == removed or k.startswith(removed + "/")]:
            del out[key]
    return sorted(out.values(), key=lambda p: p.dest)


def mount_root(path: str) -> str:
    """The folder a file outside the workdir is mounted with: its top-level folder."""
    return "/" + path.strip("/").split("/")[0]


def check_places(task: Task, files: list[Placed]) -> None:
    """Refuse files the sandbox cannot show where the image has them."""
    for f in files:
        if within(f.dest, task.workdir):
            continue
        hit = next((r for r in SANDBOX_RESERVED if within(f.dest, r)), None)
        if hit is not None:
            task.refuse(f"the image puts {f.dest} into {hit}, which the sandbox's toolchain owns")
        elif within(task.workdir, mount_root(f.dest)):
            task.refuse(f"the image puts {f.dest} beside the working directory {task.workdir}")


def check_tests(task: Task) -> None:
    """The test files the test script names are in the task's tests/ folder."""
    if task.tests_dir is None:
        return
    missing = [
        t
        for t in task.tests.tests
        if within(t, TEST_DIR) and not (task.tests_dir / t[len(TEST_DIR) + 1 :]).exists()
    ]
    if missing:
        task.refuse(f"the tests the test script runs are missing from tests/ ({', '.join(missing)})")


def task_id(folder: Path, prefix: str) -> str:
    """The scenario id of a task folder under a dataset prefix."""
    own = slug(folder.name)
    return f"{prefix}-{own}" if prefix and not own.startswith(prefix + "-") else own


def take_tests(task: Task, script: Path, folder: Path) -> None:
    """Read the task's test script and check the tests it runs are in its tests/ folder."""
    task.tests_dir = folder if folder.is_dir() else None
    if script.is_file():
        task.tests = read_tests(script.read_text(encoding="utf-8", errors="replace"))
        for reason in task.tests.refusals:
            task.refuse(reason)
    else:
        task.refuse(f"no {script.relative_to(task.root).as_posix()}")
    if task.tests_dir is None:
        task.refuse("no tests/ folder")
    check_tests(task)


def take_solution(task: Task, script: Path, *, folder: Path | None = None) -> bool:
    """Read the task's solution script (False when there is none)."""
    if not script.is_file():
        return False
    task.solution, task.solution_dir = script, folder
    task.solution_needs = read_solution(script.read_text(encoding="utf-8", errors="replace"))
    for reason in task.solution_needs.refusals:
        task.refuse(reason)
    return True
