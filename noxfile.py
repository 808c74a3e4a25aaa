"""nox sessions of assay.

Reads only generated/*.json: never YAML, never the compiler, so `nox -l` stays fast.
When generated/manifest.json is missing or older than any input (or the compiler),
`python -m harness compile` runs first. Per cell of the default matrix there is a
`bench-<cell>` session: `nox -s bench-bin-none-off -- --agent X --trials 2`. `bench-` names cells
only; benchmarks of assay itself are the `perf-*` sessions.

Sessions install the project into a reused virtualenv (`pip install -e .[dev]`), so a
fresh machine with python3 and nox needs nothing else; `nox --no-venv` runs them on the
current interpreter instead.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent
GENERATED = ROOT / "generated"
MANIFEST = GENERATED / "manifest.json"
WATCHED = ("specs", "scenarios", "compiler")

nox.options.reuse_venv = "yes"
nox.options.sessions = ["compile", "validate", "tests", "lint", "schema-drift"]


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


COMPILER_DEPS = ("pydantic", "pyyaml", "cerberus", "jinja2")
BOOTSTRAP = ROOT / ".nox" / "_compile"


def _python() -> str:
    """An interpreter that can import the compiler: nox's own, a session venv, or a bootstrapped one.

    On a fresh clone none has the compiler's four dependencies, so the first listing makes
    `.nox/_compile` with just those (about 15 s, once); `nox -l` then lists every session.
    """
    candidates = [sys.executable, *sorted(str(p) for p in (ROOT / ".nox").glob("*/bin/python"))]
    for exe in candidates:
        probe = subprocess.run(
            [exe, "-c", "import pydantic, yaml, cerberus, jinja2"], cwd=ROOT, capture_output=True
        )
        if probe.returncode == 0:
            return exe
    print(
        "nox: installing the compiler's dependencies into .nox/_compile (once) to compile specs/",
        file=sys.stderr,
    )
    made = subprocess.run([sys.executable, "-m", "venv", str(BOOTSTRAP)], capture_output=True, text=True)
    exe = str(BOOTSTRAP / "bin" / "python")
    if made.returncode == 0:
        subprocess.run([exe, "-m", "pip", "install", "-q", *COMPILER_DEPS], capture_output=True, text=True)
    return exe if Path(exe).exists() else sys.executable


def _manifest() -> dict[str, object]:
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


def _venv(session: nox.Session) -> bool:
    return session.venv_backend != "none" and not isinstance(
        session.virtualenv, nox.virtualenv.PassthroughEnv
    )


def _install(session: nox.Session) -> str:
    """Install the project into the session's venv; the python to run (nox's own without a venv)."""
    if _venv(session):
        session.install("-e", ".[dev]")
        return "python"
    return sys.executable


@nox.session
def compile(session: nox.Session) -> None:
    """Compile specs/ and scenarios/ into generated/."""
    py = _install(session)
    session.run(py, "-m", "harness", "compile", *session.posargs)


@nox.session
def validate(session: nox.Session) -> None:
    """Scenario validity: references pass, seeds fail, negatives fail exactly what they name."""
    py = _install(session)
    session.run(py, "-m", "harness", "compile")
    session.run(py, "-m", "harness", "validate", *session.posargs)


@nox.session
def tests(session: nox.Session) -> None:
    """The test suite (pytest; collecting no test is a failure)."""
    py = _install(session)
    # The fault-injection suite has its own session (it kills runners at every stage: minutes).
    marks = () if "-m" in session.posargs else ("-m", "not faults")
    try:
        session.run(py, "-m", "pytest", *marks, *session.posargs)
    except nox.command.CommandFailed as exc:
        # session.run returns no exit code, so exit 5 (no tests collected) is told apart here.
        if getattr(exc, "return_code", None) == 5:
            session.error("pytest collected no tests: a test run that checks nothing is a failure")
        raise


@nox.session
def lint(session: nox.Session) -> None:
    """The gates: ruff check, ruff format --check and mypy --strict (without the dask extra, as on a fresh clone)."""
    py = _install(session)
    session.run(py, "-m", "ruff", "check", ".")
    session.run(py, "-m", "ruff", "format", "--check", ".")
    session.run(py, "-m", "mypy", "--strict")


@nox.session(name="schema-drift")
def schema_drift(session: nox.Session) -> None:
    """Fail when generated/schema/*.json is stale against the models."""
    py = _install(session)
    session.run(py, "-m", "harness", "schema", "--check")


@nox.session(name="perf-compile")
def perf_compile(session: nox.Session) -> None:
    """Compile benchmark: 500 scenarios x 15 cells x 4 agents x 5 trials; prints figures."""
    py = _install(session)
    session.run(py, "benchmarks/bench_compile.py", *session.posargs)


@nox.session(name="perf-grade")
def perf_grade(session: nox.Session) -> None:
    """Grading benchmark: runs graded per second on the example suite; check subprocesses vs harness."""
    py = _install(session)
    session.run(py, "benchmarks/bench_grade.py", *session.posargs)


_MANIFEST = _manifest()
_DEFAULT = _MANIFEST.get("default_matrix")


@nox.session
def bench(session: nox.Session) -> None:
    """Run the whole default matrix (-- --agent X --trials N filter)."""
    py = _install(session)
    if not isinstance(_DEFAULT, str):
        session.error("no default matrix in generated/manifest.json")
    session.run(py, "-m", "harness", "matrix", _DEFAULT, *session.posargs)


def _bench_cell(matrix: str, cell: str) -> object:
    def run(session: nox.Session) -> None:
        py = _install(session)
        session.run(py, "-m", "harness", "matrix", matrix, "--cell", cell, *session.posargs)

    run.__doc__ = f"Run cell {cell} of matrix {matrix} (-- --agent X --trials N filter)."
    return run


_SAFE = re.compile(r"^bench-[a-z0-9]+(?:-[a-z0-9]+)*$")
# `bench-` names cells only (benchmarks of assay itself are `perf-*`), so a cell cannot replace a fixed
# session; the compiler keeps cell names unique.
# The compiler derives plain names; anything else is not ours to run.
for _s in _MANIFEST.get("sessions", []) or []:  # type: ignore[union-attr]
    if isinstance(_s, dict) and isinstance(_s.get("cell"), str) and _SAFE.match(str(_s.get("name"))):
        nox.session(name=_s["name"])(_bench_cell(str(_s["matrix"]), _s["cell"]))


AGENT_CLIS = ("claude_code", "codex", "mini_swe_agent", "aider")


@nox.session
def agents(session: nox.Session) -> None:
    """Install the four verified agent CLIs into .cache/agents (once) and run the agents-marked
    tests against the scripted model server (-- extra pytest args)."""
    py = _install(session)
    session.run(py, "-m", "adapters.install", *AGENT_CLIS)
    session.run(
        py,
        "-m",
        "pytest",
        "-m",
        "agents",
        "-p",
        "no:cacheprovider",
        "tests/adapters",
        "tests/isolation",
        *session.posargs,
    )


@nox.session
def report(session: nox.Session) -> None:
    """Report over a run tree: report.md, summary.json, report.html, junit.xml
    (-- <run-tree> [--regrade] [--format md,html,json,junit] [--out DIR]; default tree runs/<default matrix>)."""
    py = _install(session)
    args = list(session.posargs)
    if not args or args[0].startswith("-"):
        if not isinstance(_DEFAULT, str):
            session.error("give a run tree: nox -s report -- runs/<matrix>")
        args.insert(0, str(ROOT / "runs" / _DEFAULT))
    session.run(py, "-m", "harness", "report", *args)


@nox.session
def browser(session: nox.Session) -> None:
    """The browser-marked tests in headless Chromium (installs Debian's chromium when missing and
    apt-get is usable as root; set ASSAY_NO_APT=1 to skip that). Screenshot: build/test-artifacts/."""
    import shutil

    py = _install(session)
    has_chromium = any(shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome"))
    if (
        not has_chromium
        and shutil.which("apt-get")
        and os.geteuid() == 0
        and not os.environ.get("ASSAY_NO_APT")
    ):
        session.run("apt-get", "update", external=True)
        session.run("apt-get", "install", "-y", "chromium", external=True)
    session.run(
        py, "-m", "pytest", "-m", "browser", "-p", "no:cacheprovider", "-rs", "tests", *session.posargs
    )


@nox.session(name="perf-report")
def perf_report(session: nox.Session) -> None:
    """Report benchmark: 100,000 graded runs through the results index, first (index built), warm and
    cold page cache (root drops caches), the index share; under 20 s and 1 GB (-- --runs N --before DIR)."""
    py = _install(session)
    session.run(py, "benchmarks/bench_report.py", *session.posargs)


@nox.session
def faults(session: nox.Session) -> None:
    """Fault injection into a real matrix: SIGKILL and SIGTERM of the runner at every stage boundary,
    a full disk; prints kills x stages with the counts lost, duplicated and differing (all 0)."""
    py = _install(session)
    session.run(
        py,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-m",
        "faults",
        "-s",
        "-rs",
        "tests/faults",
        *session.posargs,
    )


@nox.session
def isolation(session: nox.Session) -> None:
    """The isolation suite: plug-ins, limits, gateway, path safety and the hostile-agent attacks,
    under bwrap and unshare (each skips visibly where it cannot run); prints attacks tried/blocked."""
    py = _install(session)
    session.run(
        py,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "tests/isolation",
        "tests/gateway",
        "tests/pathsafe",
        *session.posargs,
    )


@nox.session(name="perf-validate")
def perf_validate(session: nox.Session) -> None:
    """Validity benchmark: assay validate on the example suite, per scenario and whole; prints figures."""
    py = _install(session)
    session.run(py, "benchmarks/bench_validate.py", *session.posargs)


@nox.session(name="perf-isolation")
def perf_isolation(session: nox.Session) -> None:
    """Isolation overhead (bwrap vs none per process) and workspace preparation (overlay vs copy)."""
    py = _install(session)
    session.run(py, "benchmarks/bench_isolation.py", *session.posargs)


@nox.session
def demo(session: nox.Session) -> None:
    """The embedded demo, offline, no API keys: compile, run the demo matrix (scripted agents x
    none/none/off, bin/none/off and none/memory/off x the held-out example scenarios, the two-session
    handoff included), write runs/demo/report.{md,html} and summary.json. After
    `nox -s demo --install-only`, `nox -R -s demo` needs no network."""
    py = _install(session)
    session.run(py, "-m", "harness", "compile")
    # Trials wait on processes far more than they compute: 4 at once is faster on 2 cores.
    session.run(py, "-m", "harness", "matrix", "demo", "--parallel", "4", *session.posargs)
    session.run(
        py, "-m", "harness", "report", str(ROOT / "runs" / "demo"), "--out", str(ROOT / "runs" / "demo")
    )


@nox.session(name="demo-versions")
def demo_versions(session: nox.Session) -> None:
    """A version comparison, offline: two builds of the memory tool (tools/memory/build.py, memo 2.0
    vs 2.1) on the memory scenarios, control beside them; writes runs/demo-versions/report.{md,html}
    with the uplift-delta table and the control's drift."""
    py = _install(session)
    session.run(py, "-m", "harness", "compile")
    session.run(py, "-m", "harness", "matrix", "demo-versions", "--parallel", "4", *session.posargs)
    out = str(ROOT / "runs" / "demo-versions")
    session.run(py, "-m", "harness", "report", out, "--out", out)


@nox.session(name="perf-harness")
def perf_harness(session: nox.Session) -> None:
    """Runner benchmark: per-trial overhead (noop agent, one command check; median, p95) and
    200 concurrent agents sleeping 5 s (-- --inspect PY to measure Inspect AI side by side)."""
    py = _install(session)
    session.run(py, "benchmarks/bench_runner.py", *session.posargs)


def _install_dask(session: nox.Session) -> str:
    """The project with its `dask` extra (distributed) in the session's venv."""
    if _venv(session):
        session.install("-e", ".[dev,dask]")
        return "python"
    return sys.executable


@nox.session
def dask(session: nox.Session) -> None:
    """tests/dask: transport units, and (marked dask) a real scheduler and workers on loopback, the real runner."""
    py = _install_dask(session)
    session.run(py, "-m", "pytest", "-p", "no:cacheprovider", "-rs", "tests/dask", *session.posargs)


@nox.session(name="perf-dask")
def perf_dask(session: nox.Session) -> None:
    """Dask vs local pool: 400 trials of a 2 s agent on 2 workers x 16 slots; prints figures (-- --trials N)."""
    py = _install_dask(session)
    session.run(py, "benchmarks/bench_dask.py", *session.posargs)
