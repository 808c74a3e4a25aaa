"""grade_run: one run directory in, one classified verdict (grade.json) out.

Grading reads only the run's preserved artifacts, so it can run later, elsewhere, and
costs no agent tokens. Checks run on a scratch COPY of the final workspace with the
scenario's hidden `grader/` files overlaid — after the agent is gone, so it can neither
edit the hidden tests nor pre-write a verdict — with timeouts and, where the machine
allows it, without network. Every way grading can go wrong is one of the three
statuses; only a grade.json from a newer assay (or run.json) is refused outright.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from compiler.contract import BUDGETS
from harness.artifacts import index
from harness.artifacts.grade_sections import Snapshots
from harness.artifacts.names import GRADE_FILE
from harness.artifacts.records import Grade, RunRecord, RunStatus, read_grade, read_run
from harness.artifacts.run_view import MissingArtifacts, RunView, load_view, read_job
from harness.artifacts.store import FutureSchemaError, write_record
from harness.checks import CheckContext, run_checks, snapshot_validity
from harness.checks.engine import scrub_outcome
from harness.checks.registry import READ_ONLY_KINDS
from harness.grade import derive, expectations, session, tooluse
from harness.grade import project as proj
from harness.grade import usage as usage_mod
from harness.grade.judge_client import JudgeConfigError, check_judge_config
from harness.sandbox import fdtree, isolation
from harness.sandbox.hidden import overlay
from harness.sandbox.identity import hand_over
from harness.sandbox.isolation.checks import check_wrapper
from harness.sandbox.scenario import View, checks_view, needs_view
from harness.sandbox.scenario_env import CannotRunHere

LISTED = 50
"""Workspace entries the grader's copy left out, listed in grade.json (the count is complete)."""
EXCUSED_UNAVAILABLE = frozenset({"judge"})
"""Kinds whose `unavailable` does not sink `passed`: the judge is optional and off by default."""
IN_PROCESS = "in-process"
"""`details.check_isolation` of a grade whose checks all read in the grader's process (no command ran)."""


@functools.cache
def _netns_prefix() -> tuple[str, ...]:
    """argv prefix that runs a check command without network, when the machine can."""
    for prefix in (("unshare", "--net", "--"), ("unshare", "-rn", "--")):
        if shutil.which(prefix[0]) is None:
            continue
        try:
            ok = (
                subprocess.run([*prefix, "true"], capture_output=True, timeout=10, check=False).returncode
                == 0
            )
        except (OSError, subprocess.SubprocessError):
            ok = False
        if ok:
            return prefix
    return ()


def _no_network(argv: Sequence[str]) -> Sequence[str]:
    return [*_netns_prefix(), *argv]


def _check_wrap(
    view: RunView, workspace: Path, project: Path | None, seen: View | None
) -> tuple[Any, str, bool]:
    """Check commands run in the agent's isolation (they execute its code), network off; without
    one (isolation `none`, or it cannot run here) only in a network namespace, as before. A
    scenario's view (workdir, mounts, environment) needs the isolation: without it the run is
    ungradeable here.

    Returns the wrapper, its name (recorded in the grade: `details.check_isolation`), and whether
    it is a sandbox with namespaces of its own (`CheckContext.sandboxed`)."""
    try:
        iso = isolation.select(view.job.options.isolation)
    except Exception:  # an unknown or broken plug-in: grade with the weaker wrapper rather than not at all
        iso = None
    tools = [d for rel in view.job.cell.provisions.path if (d := proj.project_dir(project, rel)) is not None]
    if seen is not None:
        tools += list(seen.read_only)
    workdir = view.job.scenario.workdir
    wrap = (
        check_wrapper(
            iso,
            home=workspace.parent / "home",
            read_only=tools,
            mounts=seen.mounts if seen else (),
            cwd_map=(workspace, Path(workdir)) if seen and workdir else None,
        )
        if iso is not None
        else None
    )
    if wrap is not None and iso is not None:
        return wrap, iso.name, isolation.confines(iso)
    if seen is not None and needs_view(view.job.scenario):
        raise MissingArtifacts(
            "the scenario shows folders at fixed paths (workdir, mounts): its checks need the bwrap or "
            "unshare isolation, which cannot run here"
        )
    return (_no_network, "netns", False) if _netns_prefix() else (None, "none", False)


def check_env() -> dict[str, str]:
    """A small environment for check commands: no agent or provider secrets leak in."""
    keep = ("PATH", "LANG", "LC_ALL", "TZ", "TMPDIR", "HOME", "USER", "SYSTEMROOT")
    return {k: os.environ[k] for k in keep if k in os.environ}


def failed_to_run(record: RunRecord) -> str | None:
    """Why the run produced no verdict to begin with (a harness-side cause the runner recorded), or
    None. How the agent's own doing ended it — a timeout, a limit, an exit, an exit 75 the harness saw
    no failure behind (`agent_end`) — is no such cause: the run is graded on what it left."""
    if record.error:
        return record.error
    if record.interrupted:
        return "interrupted"
    if record.agent_end is not None or record.timed_out:
        return None
    if record.exit_code is None and not (record.limits_hit and set(record.limits_hit) <= set(BUDGETS)):
        return "the agent never exited on its own" + (
            f" ({', '.join(record.limits_hit)})" if record.limits_hit else ""
        )
    return None


def is_stale(run_dir: Path, *, project: Path | None = None) -> bool | None:
    """True when the stored grade was made by another grader (code, checks, grader files); None if ungraded."""
    grade = read_grade(run_dir)
    if grade is None:
        return None
    try:
        return grade.grader_hash != current_hash(run_dir, project=project)
    except MissingArtifacts:
        return None  # a damaged job.json says nothing about which grader made the grade
    except proj.UnknownScenario:
        return grade.status is not RunStatus.UNGRADEABLE


def current_hash(run_dir: Path, *, project: Path | None = None) -> str:
    """The hash the grader would record for this run now."""
    project = proj.as_project(project)
    job = read_job(run_dir, project)
    scenario = proj.current_scenario(project, job)
    exps = expectations.resolve(scenario.expectations, expectations.library(project))
    return proj.grader_hash(scenario, proj.project_dir(project, scenario.grader), exps, project)


def grade_run(
    run_dir: Path,
    *,
    project: Path | None = None,
    regrade: bool = False,
    judge: Any = None,
    grading: session.Grading | None = None,
) -> Grade:
    """Grade one run directory and persist grade.json beside run.json.

    Args:
        run_dir: The run directory (holds run.json).
        project: The project root; gives the current checks, the seed and the hidden
            grader files. Without it the run's job.json is graded as it stands.
        regrade: Grade again even when a grade.json exists (a stale one included).
        judge: A `harness.grade.judge_client.Judge` (or a name -> Judge map) enabling `judge`
            checks; None leaves them unavailable.
        grading: A session kept across runs (`harness.grade.session.Grading`: its scratch folder
            and warm check servers); None grades this run on its own.

    Returns:
        The grade (the existing one when it exists and regrade is False).

    Raises:
        FutureSchemaError: run.json or grade.json comes from a newer assay.
    """
    if not regrade:
        existing = read_grade(run_dir)
        if existing is not None:
            return existing
    grade = _grade(run_dir, proj.as_project(project), judge, grading)
    target = run_dir / GRADE_FILE
    if target.is_dir() and not target.is_symlink():  # damage where the grader's own record goes
        shutil.rmtree(target)
    write_record(target, grade)
    index.record(run_dir)
    return grade


def _grade(run_dir: Path, project: Path | None, judge: Any, grading: session.Grading | None) -> Grade:
    now = time.time()
    try:
        record = read_run(run_dir)
    except FutureSchemaError:
        raise
    except (OSError, ValueError) as exc:
        return _no_verdict(
            RunStatus.UNGRADEABLE, f"run.json unreadable: {exc}", {"graded_at": now, "grader_hash": ""}
        )
    base: dict[str, Any] = {
        "graded_at": now,
        "grader_hash": "",
        "invalid": record.invalid,
        "unsafe_edits": record.unsafe_edits,
        "infra_retries": record.infra_retries,
        "agent_end": record.agent_end,
    }
    try:
        job = read_job(run_dir, project)
        scenario = proj.current_scenario(project, job)
        grader_dir = proj.project_dir(project, scenario.grader)
        if scenario.grader and (grader_dir is None or not grader_dir.is_dir()):
            raise MissingArtifacts(
                f"the scenario's hidden grader files ({scenario.grader}) are not available; pass the project"
            )
        exps = expectations.resolve(scenario.expectations, expectations.library(project))
        if judge is None and scenario.judges:
            judge = judges_of(scenario.judges)
        base["grader_hash"] = proj.grader_hash(scenario, grader_dir, exps, project)
        base["unverified_runtime_claims"] = scenario.runtime_only
        why = failed_to_run(record)
        if why is not None:
            return _no_verdict(RunStatus.FAILED_TO_RUN, why, base)
        seed = proj.project_dir(project, scenario.seed)
        view = load_view(
            run_dir,
            record=record,
            job=job,
            checks=scenario.checks,
            expectations=tuple(exps),
            seed=seed if seed is not None and seed.is_dir() else None,
        )
    except (MissingArtifacts, proj.UnknownScenario) as exc:
        return _no_verdict(RunStatus.UNGRADEABLE, str(exc), base)
    plain = not needs_view(scenario) and scenario.environment is None and not scenario.env
    if plain and grader_dir is None and all(c.kind in READ_ONLY_KINDS for c in view.checks):
        # Nothing runs in the workspace and nothing hidden goes into it: no copy to make.
        return _assess(view, view.workspace, judge, scenario.notable_exits, project, base, in_place=True)
    with session.scratch_for(
        grading, 2 * job.limits.workspace_mb if job.limits.workspace_mb else None
    ) as scratch:
        workspace = scratch / session.WORKSPACE
        # The agent wrote this tree: FIFOs, sockets, devices and paths too long to name stay
        # behind (a check that needs one fails on its absence) and are listed in the grade.
        skipped = fdtree.copy_tree(view.workspace, workspace)
        if grader_dir is not None:
            overlay(grader_dir, workspace, seed if seed is not None and seed.is_dir() else None)
        if grading is not None:
            hand_over(workspace)  # a warm server's sandbox hands nothing over as it starts
        try:
            seen = (
                checks_view(scenario, project, workspace, scratch, mounts_from=run_dir)
                if project is not None
                else None
            )
            # a scenario's own view mounts folders made anew each run: no warm server sees them
            kept = grading if seen is None else None
            grade = _assess(view, workspace, judge, scenario.notable_exits, project, base, seen, kept)
        except (MissingArtifacts, CannotRunHere) as exc:
            return _no_verdict(RunStatus.UNGRADEABLE, str(exc), base)
        if skipped:
            listed = [f"{s.path}: {s.why}" for s in skipped[:LISTED]]
            details = {**grade.details, "workspace_skipped": listed, "workspace_skipped_count": len(skipped)}
            grade = grade.model_copy(update={"details": details})
        return grade


def _no_verdict(status: RunStatus, why: str, base: dict[str, Any]) -> Grade:
    """The grade of a run that failed to run or cannot be graded: no check ran, nothing passed."""
    return Grade(status=status, error=why, passed=False, usable=False, checks=(), **base)


class _UnusableJudge:
    """Stands in for a judge whose configuration cannot work, so its checks say why."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def judge(self, rubric: str, transcript: str) -> Any:
        raise JudgeConfigError(self.reason)


def judges_of(configs: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The judges a scenario's job names (the project's `judges:`), built for grading.

    A judge that cannot be built makes only its own checks `unavailable`, with the reason:
    `assay matrix` refuses such a configuration before any trial, so this is a regrade
    elsewhere (a missing API key variable, say), not a surprise mid-matrix.
    """
    built: dict[str, Any] = {}
    for name, config in configs.items():
        try:
            built.update(check_judge_config({name: config}))
        except JudgeConfigError as exc:
            built[name] = _UnusableJudge(str(exc))
    return built


def _assess(
    view: RunView,
    workspace: Path,
    judge: Any,
    notable: Sequence[int],
    project: Path | None,
    base: dict[str, Any],
    seen: View | None = None,
    grading: session.Grading | None = None,
    *,
    in_place: bool = False,
) -> Grade:
    # In place, every check reads in this process: no command, so no wrapper to confine one.
    wrapper, wrapper_name, sandboxed = (
        (None, IN_PROCESS, False) if in_place else _check_wrap(view, workspace, project, seen)
    )
    ctx = CheckContext(
        seed=view.seed,
        run_dir=view.run_dir,
        scenario=view.job.scenario,
        env=seen.variables(check_env()) if seen else check_env(),
        timeout_s=None,
        wrap=wrapper,
        sandboxed=sandboxed,
        extra={"run": view, "judge": judge},
        path_first=seen.path_first if seen else (),
        servers=grading.servers if grading is not None else None,
        snapshot_dir=grading.snapshots() if grading is not None else None,
    )
    # Messages name the scratch copy; a stable name keeps regrades of the same tree identical.
    raw = [scrub_outcome(o, workspace) for o in run_checks(view.checks, workspace, ctx)]
    view.cache[snapshot_validity.FINAL_OUTCOMES] = {o.id: o for o in raw}
    outcomes = derive.authority_outcomes(raw)
    counted = [o for o in outcomes if not (o.kind in EXCUSED_UNAVAILABLE and o.outcome == "unavailable")]
    passed = all(o.outcome == "pass" for o in counted)
    verdicts = derive.authorities(raw)
    lint = derive.lint_findings(view.checks, outcomes)
    writes = [s.t for s in view.snapshots]
    friction = tooluse.friction(view.trace, writes)
    snaps = _snapshots(view, workspace, ctx)
    first_t = next((v.t for v in snaps.verdicts if v.valid), None)
    context = derive.context_load(view.context, view.job)  # advisory: the agent writes context.json
    invalid = base.pop("invalid")
    model = view.record.model or view.job.agent.model
    ev = expectations.Evidence(view, workspace, ctx, friction)
    return Grade(
        status=RunStatus.GRADED,
        passed=passed,
        usable=passed and not any(f.severity == "error" for f in lint),
        invalid=invalid,
        checks=tuple(outcomes),
        failed_layers=tuple(sorted({o.layer for o in counted if o.outcome != "pass"})),
        metrics=derive.metrics(view.trace, view.events()),
        authorities=verdicts,
        disagreement=derive.disagreements(verdicts),
        diagnostics=tuple(f"{o.id}: {o.message}" for o in outcomes if o.outcome != "pass"),
        lint_findings=lint,
        tool_use=tooluse.tool_use(view.trace, notable),
        friction=friction,
        expectations=expectations.evaluate(list(view.expectations), ev),
        snapshots=snaps,
        usage=usage_mod.usage(
            usage_mod.account(view),
            malformed=view.usage_malformed,
            first_valid_t=first_t,
            model=model,
            table=usage_mod.load_prices(project),
        ),
        context=context,
        details={"check_isolation": wrapper_name, "network_isolated_checks": wrapper_name != "none"},
        **base,
    )


def _snapshots(view: RunView, workspace: Path, ctx: CheckContext) -> Snapshots:
    own = next((c for c in view.checks if c.kind == "snapshot"), None)
    try:
        label, deciders = snapshot_validity.validity_checks(view, own.params if own else {})
    except Exception as exc:
        return Snapshots(count=len(view.snapshots), authority=f"none: {exc}")
    if not deciders or not view.snapshots:
        return Snapshots(count=len(view.snapshots), authority=label or None)
    verdicts = snapshot_validity.validity(view, label, deciders, workspace, ctx)
    first, regressions = snapshot_validity.summarise(verdicts)
    return Snapshots(
        count=len(verdicts),
        authority=label,
        verdicts=verdicts,
        first_valid=first,
        regressions=regressions,
        final_valid=verdicts[-1].valid,
    )
