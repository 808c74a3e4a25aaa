"""Scenario validity: do a scenario's checks tell a finished task from an unfinished one?

For every scenario three kinds of workspace are built in a temporary folder and assessed by
the same check engine the grader uses:

- `reference`: seed + reference overlay (+ grader files) must pass every check;
- `seed`: the untouched seed (+ grader files) must fail at least one check;
- `negative <name>`: seed + reference + the negative's overlay folder, then its patch
  (a unified diff applied with `git apply` on top of seed + reference), + grader files,
  must fail exactly the checks it names. In seed 000's `scenario.json` form a negative is an
  overlay like the reference, laid on the seed alone (`Negative.base == "seed"`).

Grader files go on last because the grader copies them in after the agent has finished.
Every workspace is assessed twice; a check whose outcome differs is reported as flaky.
Checks that read a run (trace, transcript, ...) are `unavailable` on a bare workspace: they
are listed as not validated rather than failed. Check coverage lists, per check, the
negatives that name it; a check no negative names is uncovered (an error with `strict`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from compiler.contract import ScenarioJob
from harness.artifacts.names import WORKSPACE_DIR
from harness.artifacts.records import CheckOutcome
from harness.checks import CheckContext, run_checks
from harness.sandbox.hidden import overlay
from harness.sandbox.isolation import select
from harness.sandbox.isolation.checks import check_wrapper
from harness.sandbox.scenario import checks_view, mount_dir, needs_view, refuse_without_mounts
from harness.sandbox.scenario_env import CannotRunHere

REFERENCE = "reference"
SEED = "seed"


@dataclass(frozen=True)
class Workspace:
    """One workspace to build and assess."""

    scenario: ScenarioJob
    overlay: str
    """`reference`, `seed`, or `negative <name>`."""
    layers: tuple[Path, ...]
    """Folders copied over each other, in order."""
    patch: Path | None = None
    """A unified diff applied after the layers."""
    after: tuple[Path, ...] = ()
    """Folders copied on last (the grader's files)."""
    fails: frozenset[str] | None = None
    """For a negative: the checks it must fail."""
    mount_references: bool = False
    """Whether the writable mounts' reference overlays are laid on their copies (the workspace
    holds the reference)."""


@dataclass(frozen=True)
class Problem:
    """One reason a scenario is not valid."""

    scenario: str
    overlay: str
    check: str | None
    message: str
    kind: str
    """reference | seed | negative | error | flaky | uncovered | setup."""

    def line(self) -> str:
        """`<scenario> [<overlay>] <check>: <message>` — what the CLI prints."""
        check = f" check {self.check}" if self.check else ""
        return f"{self.scenario} [{self.overlay}]{check}: {self.message}"


@dataclass(frozen=True)
class Assessed:
    """A workspace's outcomes, first and second time."""

    workspace: Workspace
    first: tuple[CheckOutcome, ...]
    second: tuple[CheckOutcome, ...]
    setup_error: str | None = None


@dataclass(frozen=True)
class ScenarioValidity:
    """The verdict on one scenario."""

    scenario: str
    problems: tuple[Problem, ...]
    coverage: tuple[tuple[str, tuple[str, ...]], ...]
    """(check id, negatives naming it), in check order."""
    not_validated: tuple[str, ...]
    """Checks that were unavailable on a bare workspace (they need a run)."""
    workspaces: int
    observed: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """(check id, the seed and negatives that actually failed it when judged), in check order."""


@dataclass(frozen=True)
class ValidityReport:
    """The verdict on a suite."""

    scenarios: tuple[ScenarioValidity, ...]
    strict: bool
    duration_s: float
    check_runs: int

    @property
    def problems(self) -> list[Problem]:
        """Everything that makes the suite invalid (uncovered checks only when strict)."""
        return [p for s in self.scenarios for p in s.problems if p.kind != "uncovered" or self.strict]

    @property
    def uncovered(self) -> list[Problem]:
        """Checks no negative names."""
        return [p for s in self.scenarios for p in s.problems if p.kind == "uncovered"]

    @property
    def ok(self) -> bool:
        """True when the suite is valid."""
        return not self.problems


def workspaces(scenario: ScenarioJob, project: Path) -> list[Workspace]:
    """The reference, the seed and every negative of a scenario, as workspaces to build."""
    seed = project / scenario.seed
    grader = (project / scenario.grader,) if scenario.grader else ()
    reference = (project / scenario.reference,) if scenario.reference else ()
    found = [
        Workspace(scenario, REFERENCE, (seed, *reference), after=grader, mount_references=True),
        Workspace(scenario, SEED, (seed,), after=grader),
    ]
    for neg in scenario.negatives:
        overlay = (project / neg.dir,) if neg.dir else ()
        patch = project / neg.patch if neg.patch else None
        name = f"negative {neg.name}"
        under = reference if neg.base == "reference" else ()
        found.append(
            Workspace(
                scenario, name, (seed, *under, *overlay), patch, grader, frozenset(neg.fails), bool(under)
            )
        )
    return found


def build(w: Workspace, dest: Path) -> None:
    """Lay the workspace's folders over each other in dest, apply its patch, add the grader's files."""
    dest.mkdir(parents=True)
    for layer in w.layers:
        shutil.copytree(layer, dest, dirs_exist_ok=True, symlinks=True)
    if w.patch is not None:
        done = subprocess.run(
            ["git", "apply", "--whitespace=nowarn", str(w.patch)],
            cwd=dest,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise ValueError(f"patch {w.patch.name} does not apply: {done.stderr.strip()}")
    for layer in w.after:  # as the grader lays them: its folders cleared of what the workspace put there
        overlay(layer, dest, w.layers[0] if w.layers else None)


def assess(w: Workspace, project: Path, scratch: Path) -> Assessed:
    """Build one workspace and run its scenario's checks on it twice."""
    dest = scratch / w.scenario.id / w.overlay.replace(" ", "-") / WORKSPACE_DIR
    try:
        build(w, dest)
    except (OSError, ValueError) as exc:
        return Assessed(w, (), (), setup_error=str(exc))
    try:
        ctx = _context(w.scenario, project, dest)
    except CannotRunHere as exc:
        return Assessed(w, (), (), setup_error=str(exc))
    if w.mount_references:
        for m in w.scenario.mounts:
            if m.reference is not None:
                shutil.copytree(
                    project / m.reference, mount_dir(dest.parent, m), dirs_exist_ok=True, symlinks=True
                )
    first = tuple(run_checks(w.scenario.checks, dest, ctx))
    second = tuple(run_checks(w.scenario.checks, dest, ctx))
    shutil.rmtree(dest.parent, ignore_errors=True)
    return Assessed(w, first, second)


def _context(scenario: ScenarioJob, project: Path, dest: Path) -> CheckContext:
    """The checks' context: a scenario with a view of its own (a workdir, mounts, an environment)
    is assessed in the sandbox the grader uses, so validate sees the paths the agent sees."""
    seen = checks_view(scenario, project, dest, dest.parent, mounts_from=None)
    if seen is None:
        return CheckContext(seed=project / scenario.seed, scenario=scenario)
    iso = select("auto")
    refuse_without_mounts(scenario, iso.name)
    wrap = check_wrapper(
        iso,
        home=dest.parent / "home",
        read_only=seen.read_only,
        mounts=seen.mounts,
        cwd_map=(dest, Path(scenario.workdir)) if scenario.workdir else None,
    )
    if wrap is None and needs_view(scenario):
        raise CannotRunHere(f"cannot run here: scenario {scenario.id!r} needs the bwrap or unshare isolation")
    return CheckContext(
        seed=project / scenario.seed,
        scenario=scenario,
        env=seen.variables(
            {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TZ", "HOME")}
        ),
        wrap=wrap,
        path_first=seen.path_first,
    )


def _flaky(sid: str, j: Assessed) -> list[Problem]:
    return [
        Problem(
            sid,
            j.workspace.overlay,
            a.id,
            f"flaky check: {a.outcome} then {b.outcome} on the same workspace ({a.message or b.message})",
            "flaky",
        )
        for a, b in zip(j.first, j.second, strict=True)
        if a.outcome != b.outcome
    ]


def _verdicts(
    scenario: ScenarioJob, overlay: str, fails: frozenset[str] | None, assessed: dict[str, CheckOutcome]
) -> list[Problem]:
    """The rule of one workspace: reference passes all, seed fails one, a negative fails exactly its list."""
    sid = scenario.id
    found = [
        Problem(sid, overlay, o.id, f"could not run: {o.message}", "error")
        for o in assessed.values()
        if o.outcome == "error"
    ]
    failing = [i for i, o in assessed.items() if o.outcome == "fail"]
    if overlay == REFERENCE:
        found += [
            Problem(
                sid,
                overlay,
                i,
                f"the reference fails it ({scenario_layer(scenario, i)} layer): {assessed[i].message}",
                "reference",
            )
            for i in failing
        ]
    elif overlay == SEED:
        if not failing:
            passing = ", ".join(i for i, o in assessed.items() if o.outcome == "pass")
            found.append(
                Problem(
                    sid,
                    overlay,
                    None,
                    f"the untouched seed passes every check ({passing}): "
                    "no check notices that the task was not done",
                    "seed",
                )
            )
    else:
        found += _negative(sid, overlay, fails or frozenset(), assessed)
    return found


def _negative(
    sid: str, overlay: str, named: frozenset[str], assessed: dict[str, CheckOutcome]
) -> list[Problem]:
    """A negative fails exactly what it names: whole checks, or single tests (`<check>::<test id>`),
    whose check then fails while its other tests pass."""
    found: list[Problem] = []
    tests: dict[str, set[str]] = {}
    for entry in named:
        cid, _, test = entry.partition("::")
        if test:
            tests.setdefault(cid, set()).add(test)
    for i, o in assessed.items():
        if (i in named or i in tests) and o.outcome == "pass":
            found.append(
                Problem(sid, overlay, i, "passes, but the negative names it: it must fail", "negative")
            )
        elif i not in named and i not in tests and o.outcome == "fail":
            found.append(
                Problem(sid, overlay, i, f"fails, but the negative does not name it: {o.message}", "negative")
            )
        if i in named or i not in tests or o.outcome not in ("pass", "fail"):
            continue
        ran = {t.id: t for t in o.tests}
        for test in sorted(tests[i] - set(ran)):
            found.append(
                Problem(
                    sid, overlay, f"{i}::{test}", "the negative names this test; it did not run", "negative"
                )
            )
        for t in o.tests:
            if t.id in tests[i] and t.outcome != "fail":
                found.append(
                    Problem(
                        sid,
                        overlay,
                        f"{i}::{t.id}",
                        "passes, but the negative names it: it must fail",
                        "negative",
                    )
                )
            elif t.id not in tests[i] and t.outcome == "fail":
                found.append(
                    Problem(
                        sid,
                        overlay,
                        f"{i}::{t.id}",
                        f"fails, but the negative does not name it: {(t.message.splitlines() or [''])[0][:200]}",
                        "negative",
                    )
                )
    return found


def scenario_validity(scenario: ScenarioJob, assessed: Sequence[Assessed]) -> ScenarioValidity:
    """Apply the validity rules to one scenario's assessed workspaces."""
    sid = scenario.id
    problems: list[Problem] = []
    unavailable: set[str] = set()
    for j in assessed:
        w = j.workspace
        if j.setup_error is not None:
            problems.append(
                Problem(sid, w.overlay, None, f"workspace could not be built: {j.setup_error}", "setup")
            )
            continue
        problems += _flaky(sid, j)
        unavailable |= {o.id for o in j.first if o.outcome == "unavailable"}
        available = {o.id: o for o in j.first if o.outcome != "unavailable"}
        problems += _verdicts(scenario, w.overlay, w.fails, available)
    coverage = tuple(
        (c.id, tuple(n.name for n in scenario.negatives if c.id in {f.partition("::")[0] for f in n.fails}))
        for c in scenario.checks
    )
    problems += [
        Problem(sid, "coverage", cid, "no negative fails this check", "uncovered")
        for cid, names in coverage
        if not names and cid not in unavailable
    ]
    failed_by: dict[str, list[str]] = {c.id: [] for c in scenario.checks}
    for j in assessed:
        if j.workspace.overlay != REFERENCE:
            name = j.workspace.overlay.removeprefix("negative ")
            for o in j.first:
                if o.outcome == "fail" and o.id in failed_by:
                    failed_by[o.id].append(name)
    observed = tuple((cid, tuple(names)) for cid, names in failed_by.items())
    return ScenarioValidity(
        sid, tuple(problems), coverage, tuple(sorted(unavailable)), len(assessed), observed
    )


def scenario_layer(scenario: ScenarioJob, check_id: str) -> str:
    """The layer a check's failure implicates."""
    return next((c.layer for c in scenario.checks if c.id == check_id), "agent")


def validate(
    scenarios: Sequence[ScenarioJob],
    project: Path,
    *,
    strict: bool = False,
    jobs: int | None = None,
) -> ValidityReport:
    """Assess every scenario's reference, seed and negatives; return the verdicts.

    Args:
        scenarios: The compiled scenarios.
        project: The project root (scenario paths are relative to it).
        strict: Make uncovered checks problems.
        jobs: Workspaces assessed at once (default: the machine's cores, at most 4).
    """
    started = time.monotonic()
    todo = [w for s in scenarios for w in workspaces(s, project)]
    workers = jobs or min(4, os.cpu_count() or 1)
    with tempfile.TemporaryDirectory(prefix="assay-validate-") as tmp:
        scratch = Path(tmp)
        with ThreadPoolExecutor(max_workers=workers) as pool:
            assessed = list(pool.map(lambda w: assess(w, project, scratch), todo))
    results = [scenario_validity(s, [j for j in assessed if j.workspace.scenario is s]) for s in scenarios]
    runs = sum(len(j.first) + len(j.second) for j in assessed)
    return ValidityReport(tuple(results), strict, round(time.monotonic() - started, 2), runs)
