"""nox sessions of assay.

Reads only generated/*.json: never YAML, never the compiler, so `nox -l` stays fast.
When generated/manifest.json is missing or older than any input (or the compiler),
`python -m harness compile` runs first. Per cell of the default matrix there is a
`bench-<cell>` session: `nox -s bench-bin-none-off -- --agent X --trials 2`. `bench-` names cells
only; benchmarks of assay itself are the `perf-*` sessions.

A session runs on nox's own interpreter when that already has this checkout installed with
what the session needs (assay itself is enough for `compile` and `report`; the example suite
needs `dev`: its tool under test and its pytest checks). Otherwise sessions that need the same
packages share one environment: `.nox/env-dev`
(the project with its `dev` extra) for most, `.nox/env-dev-dask` for the Dask ones,
`.nox/env-inspect` for Inspect AI in `perf`. The first session that needs one makes it (with
uv, which the project's `nox[uv]` dependency brings; else venv and pip), and every later
session starts its work at once; it is made again when pyproject.toml changes. `lint` always
uses `.nox/env-dev`, as on a fresh clone. `nox --no-venv` runs every session on nox's own
interpreter.

That machinery (the manifest's freshness, the shared environments) is `noxsupport/noxenv.py`;
this file holds the sessions.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import nox

# Nox does not put the noxfile's folder on sys.path. Only noxsupport/ goes on it, never the checkout:
# noxenv asks importlib where `harness` comes from to tell whether nox's interpreter has this checkout.
sys.path.insert(0, str(Path(__file__).resolve().parent / "noxsupport"))
import noxenv
from noxenv import ROOT

nox.options.reuse_venv = "yes"
nox.options.default_venv_backend = "none"  # the sessions share environments of their own: noxenv.install
nox.options.sessions = ["compile", "validate", "tests", "lint", "schema-drift"]


@nox.session
def compile(session: nox.Session) -> None:
    """Compile specs/ and scenarios/ into generated/."""
    py = noxenv.runtime(session)
    session.run(py, "-m", "harness", "compile", *session.posargs)


@nox.session
def validate(session: nox.Session) -> None:
    """Scenario validity: references pass, seeds fail, negatives fail exactly what they name."""
    py = noxenv.example(session)
    session.run(py, "-m", "harness", "compile")
    session.run(py, "-m", "harness", "validate", *session.posargs)


@nox.session
def tests(session: nox.Session) -> None:
    """The fast test suite, in parallel (collecting no test is a failure). The heavy suites have
    sessions of their own: isolation, faults, dask, browser, agents (all in .ci/run)."""
    py = noxenv.install(session)
    marks = () if "-m" in session.posargs else ("-m", FAST)  # `-- -m X` chooses the tests instead
    _pytest(session, py, *marks, *(f"--ignore={d}" for d in HEAVY_DIRS), "-n", "4", *session.posargs)


FAST = "not slow and not faults and not isolation and not dask and not browser and not agents"
"""The README's test command: every test but the heavy suites' (markers in pyproject.toml)."""
HEAVY_DIRS = ("tests/isolation", "tests/dask", "tests/faults")
"""Folders of heavy suites: the `isolation`, `dask` and `faults` sessions run them."""


def _pytest(session: nox.Session, py: str, *args: str) -> None:
    try:
        session.run(py, "-m", "pytest", "-p", "no:cacheprovider", *args)
    except nox.command.CommandFailed as exc:
        # session.run returns no exit code, so exit 5 (no tests collected) is told apart here.
        if getattr(exc, "return_code", None) == 5:
            session.error("pytest collected no tests: a test run that checks nothing is a failure")
        raise


@nox.session
def slow(session: nox.Session) -> None:
    """The slow-marked tests outside the other heavy suites: Ctrl-C and SIGKILL of a matrix halfway
    and its resume through the CLI, builds of compared versions, a fresh copy's install."""
    py = noxenv.install(session)
    marks = "slow and not faults and not isolation and not dask and not browser and not agents"
    _pytest(
        session, py, "-m", marks, "-rs", *(f"--ignore={d}" for d in HEAVY_DIRS), "tests", *session.posargs
    )


@nox.session
def lint(session: nox.Session) -> None:
    """The gates: ruff check, ruff format --check and mypy --strict (without the dask extra, as on a fresh clone)."""
    py = noxenv.install(session, own=False)  # as on a fresh clone, whatever nox runs on
    session.run(py, "-m", "ruff", "check", ".")
    session.run(py, "-m", "ruff", "format", "--check", ".")
    session.run(py, "-m", "mypy", "--strict")


@nox.session(name="schema-drift")
def schema_drift(session: nox.Session) -> None:
    """Fail when generated/schema/*.json is stale against the models."""
    py = noxenv.install(session)
    session.run(py, "-m", "harness", "schema", "--check")


@nox.session(name="perf-compile")
def perf_compile(session: nox.Session) -> None:
    """Compile benchmark: 500 scenarios x 15 cells x 4 agents x 5 trials; prints figures."""
    py = noxenv.install(session)
    session.run(py, "benchmarks/bench_compile.py", *session.posargs)


@nox.session(name="perf-grade")
def perf_grade(session: nox.Session) -> None:
    """Grading benchmark: runs graded per second on the example suite; check subprocesses vs harness."""
    py = noxenv.install(session)
    session.run(py, "benchmarks/bench_grade.py", *session.posargs)


_MANIFEST = noxenv.manifest()
_DEFAULT = _MANIFEST.get("default_matrix")


@nox.session
def bench(session: nox.Session) -> None:
    """Run the whole default matrix (-- --agent X --trials N filter)."""
    py = noxenv.example(session)
    if not isinstance(_DEFAULT, str):
        session.error("no default matrix in generated/manifest.json")
    session.run(py, "-m", "harness", "matrix", _DEFAULT, *session.posargs)


def _bench_cell(matrix: str, cell: str) -> object:
    def run(session: nox.Session) -> None:
        py = noxenv.example(session)
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


@nox.session
def agents(session: nox.Session) -> None:
    """Install every built-in adapter's agent CLI into .cache/agents (once) and run the agents-marked
    tests against the scripted model server (-- extra pytest args)."""
    py = noxenv.install(session)
    session.run(py, "-m", "adapters.install", "--all")
    _pytest(session, py, "-m", "agents", "tests/adapters", "tests/isolation", *session.posargs)


@nox.session
def report(session: nox.Session) -> None:
    """Report over a run tree: report.md, summary.json, report.html, junit.xml
    (-- <run-tree> [--regrade] [--format md,html,json,junit] [--out DIR]; default tree runs/<default matrix>)."""
    py = noxenv.runtime(session)
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

    py = noxenv.install(session)
    has_chromium = any(shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome"))
    if (
        not has_chromium
        and shutil.which("apt-get")
        and os.geteuid() == 0
        and not os.environ.get("ASSAY_NO_APT")
    ):
        session.run("apt-get", "update", external=True)
        session.run("apt-get", "install", "-y", "chromium", external=True)
    _pytest(session, py, "-m", "browser", "-rs", "tests", *session.posargs)


@nox.session(name="perf-report")
def perf_report(session: nox.Session) -> None:
    """Report benchmark: 100,000 graded runs through the results index, first (index built), warm and
    cold page cache (root drops caches), the index share; under 20 s and 1 GB (-- --runs N --before DIR)."""
    py = noxenv.install(session)
    session.run(py, "benchmarks/bench_report.py", *session.posargs)


@nox.session
def faults(session: nox.Session) -> None:
    """Fault injection into a real matrix: SIGKILL and SIGTERM of the runner at every stage boundary,
    a full disk; prints kills x stages with the counts lost, duplicated and differing (all 0)."""
    py = noxenv.install(session)
    _pytest(session, py, "-m", "faults", "-s", "-rs", "tests/faults", *session.posargs)


@nox.session
def isolation(session: nox.Session) -> None:
    """The isolation suite: plug-ins, limits, gateway, path safety and the hostile-agent attacks,
    under bwrap and unshare (each skips visibly where it cannot run); prints attacks tried/blocked.
    Then the tests elsewhere marked `isolation` (a trial's view of its scenario, seed 000's adapter,
    `assay import` end to end), which no other session runs."""
    py = noxenv.install(session)
    _pytest(session, py, "tests/isolation", "tests/gateway", "tests/pathsafe", *session.posargs)
    if not session.posargs:  # tests named on the command line ran above
        elsewhere = (*HEAVY_DIRS, "tests/gateway", "tests/pathsafe")
        _pytest(session, py, "-m", ISOLATED, "-rs", *(f"--ignore={d}" for d in elsewhere), "tests")


ISOLATED = "isolation and not faults and not dask and not browser and not agents"
"""The isolation-marked tests outside the isolation suite's folders."""


@nox.session(name="perf-validate")
def perf_validate(session: nox.Session) -> None:
    """Validity benchmark: assay validate on the example suite, per scenario and whole; prints figures."""
    py = noxenv.install(session)
    session.run(py, "benchmarks/bench_validate.py", *session.posargs)


@nox.session(name="perf-capture")
def perf_capture(session: nox.Session) -> None:
    """Capture benchmark: diff.patch and unsafe edits of 60,000 new files (goal <= 5 s); wall and CPU."""
    py = noxenv.install(session)
    session.run(py, "benchmarks/bench_capture.py", *session.posargs)


@nox.session(name="perf-isolation")
def perf_isolation(session: nox.Session) -> None:
    """Isolation overhead (bwrap vs none per process) and workspace preparation (overlay vs copy)."""
    py = noxenv.install(session)
    session.run(py, "benchmarks/bench_isolation.py", *session.posargs)


@nox.session
def demo(session: nox.Session) -> None:
    """The embedded demo, offline, no API keys: compile, run the demo matrix (scripted agents x
    none/none/off, bin/none/off and none/memory/off x the held-out example scenarios, the two-session
    handoff included), write runs/demo/report.{md,html} and summary.json. After
    `nox -s demo --install-only`, `nox -R -s demo` needs no network.

    `nox -s demo -- --until decided` runs the same comparisons until decided instead (matrix
    demo-decided: up to 20 trials per cell, in rounds; a comparison or scenario stops once decided)
    into runs/demo-decided, whose report says what stopped when and the tokens it saved."""
    py = noxenv.example(session)
    session.run(py, "-m", "harness", "compile")
    args = list(session.posargs)
    decided = any(
        a == "--until=decided" or (a == "--until" and args[i + 1 : i + 2] == ["decided"])
        for i, a in enumerate(args)
    )
    matrix = "demo-decided" if decided else "demo"
    # Trials wait on processes far more than they compute: 4 at once is faster on 2 cores.
    session.run(py, "-m", "harness", "matrix", matrix, "--parallel", "4", *args)
    out = str(ROOT / "runs" / matrix)
    session.run(py, "-m", "harness", "report", out, "--out", out)


@nox.session(name="demo-versions")
def demo_versions(session: nox.Session) -> None:
    """A version comparison, offline: two builds of the memory tool (tools/memory/build.py, memo 2.0
    vs 2.1) on the memory scenarios, control beside them; writes runs/demo-versions/report.{md,html}
    with the uplift-delta table and the control's drift."""
    py = noxenv.example(session)
    session.run(py, "-m", "harness", "compile")
    session.run(py, "-m", "harness", "matrix", "demo-versions", "--parallel", "4", *session.posargs)
    out = str(ROOT / "runs" / "demo-versions")
    session.run(py, "-m", "harness", "report", out, "--out", out)


INSPECT_AI = "inspect-ai==0.3.285"
"""Inspect AI, measured side by side in `perf` (pinned: the comparison is with one release)."""


@nox.session
def perf(session: nox.Session) -> None:
    """assay's speed against its goals, from one run: 200 trivial trials side by side with Inspect AI
    (installed once into .nox/env-inspect), the per-trial overhead by stage, grading throughput, the
    README's demo and test command on fresh clones (-- --skip-demo --skip-tests --skip-grade)."""
    py = noxenv.install(session)
    inspect = noxenv.make_env("inspect", [INSPECT_AI], noxenv.installer(session)) / "bin" / "python"
    session.run(py, "benchmarks/bench_perf.py", "--inspect", str(inspect), *session.posargs)


@nox.session(name="perf-harness")
def perf_harness(session: nox.Session) -> None:
    """Runner benchmark: per-trial overhead (noop agent, one command check; median, p95) and
    200 concurrent agents sleeping 5 s (-- --inspect PY to measure Inspect AI side by side)."""
    py = noxenv.install(session)
    session.run(py, "benchmarks/bench_runner.py", *session.posargs)


def _install_dask(session: nox.Session) -> str:
    """The project with its `dask` extra (distributed): the shared `.nox/env-dev-dask`."""
    return noxenv.install(session, ("dev", "dask"), extras=("dev", "dask"))


@nox.session
def dask(session: nox.Session) -> None:
    """tests/dask: transport units, and (marked dask) a real scheduler and workers on loopback, the real runner."""
    py = _install_dask(session)
    _pytest(session, py, "-rs", "tests/dask", *session.posargs)


@nox.session(name="perf-dask")
def perf_dask(session: nox.Session) -> None:
    """Dask vs local pool: 400 trials of a 2 s agent on 2 workers x 16 slots; prints figures (-- --trials N)."""
    py = _install_dask(session)
    session.run(py, "benchmarks/bench_dask.py", *session.posargs)


IMPORT_DATASETS = (("terminal-bench", "ASSAY_TB_DATASET"), ("harbor", "ASSAY_HARBOR_DATASET"))
"""Formats `nox -s import-datasets` imports, and the variable naming each one's dataset folder."""


@nox.session(name="import-datasets")
def import_datasets(session: nox.Session) -> None:
    """`assay import` on public datasets you have (a folder of tasks in ASSAY_TB_DATASET and/or
    ASSAY_HARBOR_DATASET; skipped, visibly, without one): each goes into a scratch copy of the
    example project (.nox-import/), is validated, and its matrix runs (the oracle must pass every
    imported task, the no-op agent fail every one). Prints the figures (benchmarks/import_datasets.py;
    `-- --parallel 1` for a loaded machine); the import report is .nox-import/imports/<name>.md."""
    given = [(fmt, Path(os.environ[var])) for fmt, var in IMPORT_DATASETS if os.environ.get(var)]
    present = [(fmt, path) for fmt, path in given if path.is_dir()]
    if not present:
        session.skip("no dataset: set ASSAY_TB_DATASET and/or ASSAY_HARBOR_DATASET to a folder of tasks")
    py = noxenv.install(session)
    scratch = ROOT / ".nox-import"
    if not scratch.is_dir():
        scratch.mkdir()
        for folder in ("specs", "scenarios", "tools", "agents", "guides", "wiki"):
            if (ROOT / folder).is_dir():
                session.run("cp", "-r", str(ROOT / folder), str(scratch / folder), external=True)
    for fmt, path in present:
        session.run(
            py, "benchmarks/import_datasets.py", fmt, str(path), "--project", str(scratch), *session.posargs
        )
