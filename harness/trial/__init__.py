"""One trial, end to end: prepare → provision → run → capture, then run.json.

`run_trial(job, project=..., run_dir=...)` is pure in the sense the executors need: a job in,
a run directory out, nothing shared with other trials. It never raises for a trial that went
wrong — a crash, a failing provision, an exhausted retry budget become `error` (with the
traceback) on run.json — and it writes run.json last and atomically, so a killed runner leaves
nothing that looks finished.
"""

from __future__ import annotations

import contextlib
import json
import platform
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from compiler.contract import Job, Step
from harness.artifacts.names import (
    AGENT_INFO,
    DIFF_FILE,
    GRADE_FILE,
    HOME_DIR,
    META_DIR,
    OUTBOX_DIR,
    RUN_FILE,
    SETUP_LOG,
    SKILL_DIR,
    STATE_DIR,
    TMP_DIR,
    WORKSPACE_DIR,
    step_dir_name,
)
from harness.artifacts.records import CanaryResult, RunnerMetrics, RunRecord, StepRecord
from harness.artifacts.store import write_record
from harness.artifacts.tree import identity, start_run
from harness.gateway import trial as gateway_trial
from harness.sandbox import proc, protections
from harness.sandbox.identity import hand_over
from harness.sandbox.isolation import Isolation, Mount, SandboxLimits, limits, select
from harness.sandbox.launch import Launcher
from harness.trial import agent, canaries, capture, provision, workspace
from harness.trial import steps as multistep
from harness.trial.environment import TrialPaths, ancestor_instruction_files, build
from harness.trial.session import Interrupted, Session, place_evidence, remove_evidence, stash_attempt


def _paths(job: Job, run_dir: Path, project: Path) -> TrialPaths:
    skill = job.cell.provisions.skill_dir
    return TrialPaths(
        run_dir=run_dir,
        workspace=run_dir / WORKSPACE_DIR,
        home=run_dir / HOME_DIR,
        tmp=run_dir / TMP_DIR,
        state=run_dir / STATE_DIR,
        shim_bin=run_dir / META_DIR / "bin",
        skill_dir=run_dir / SKILL_DIR if skill else None,
        agent_cache=project / ".cache" / "agents" / job.agent.id,
    )


def _launcher(
    job: Job,
    paths: TrialPaths,
    env: dict[str, str],
    provided: provision.Provided,
    iso: Isolation,
    extra: tuple[Mount, ...] = (),
    prefix: tuple[str, ...] = (),
) -> Launcher:
    lim = job.limits
    # Only the adapters package, not the checkout that holds it: that may hold scenarios and .git.
    code_dirs = {Path(sys.prefix), Path(sys.base_prefix), agent.CODE_ROOT / "adapters"}
    outbox = paths.run_dir / OUTBOX_DIR  # the sandbox sees it at the run dir's path (pathsafe.collect)
    outbox.mkdir(exist_ok=True)
    own = [paths.workspace, paths.home, paths.tmp, paths.state]
    assay_dir = paths.shim_bin.parent  # the shim, and the oracle's copy of the reference
    # The agent cache also at its real path: a pip venv's scripts name their interpreter by it.
    cache_real = paths.agent_cache.resolve()
    read_only = [
        p for p in (assay_dir, paths.skill_dir, paths.agent_cache, cache_real) if p is not None and p.exists()
    ]
    read_only = list(dict.fromkeys(read_only))
    mounts = (
        # The sandbox's run directory is an outbox: adapters write usage.jsonl & co. where their
        # environment says, but never see job.json, snapshots or records, nor plant links there.
        Mount(src=outbox, dest=paths.run_dir, writable=True),
        *(Mount(src=d, dest=d, writable=True) for d in own),
        *(Mount(src=d, dest=d, writable=False) for d in read_only),
        *provided.mounts,
        *(Mount(src=d, dest=d, writable=False) for d in sorted(code_dirs)),
        *extra,
    )
    return Launcher(
        isolation=iso,
        cwd=paths.workspace,
        env=env,
        home=paths.home,
        mounts=mounts,
        # Under network: on with a gateway (prefix: its forwarder) the sandbox keeps its own network
        # namespace as under off, and reaches the network only through the gateway's proxy.
        network=job.cell.provisions.network and not prefix,
        limits=SandboxLimits(
            memory_mb=lim.memory_mb,
            pids=lim.pids,
            file_size_mb=lim.file_size_mb,
            workspace_mb=lim.workspace_mb,
            outbox_mb=lim.outbox_mb,
        ),
        ro_binds=provided.ro_binds,
        outbox=(outbox, paths.run_dir),
        prefix=prefix,
        watch=(paths.workspace, paths.home, paths.tmp, paths.state),
        label=job.id,
    )


def _setup(job: Job, launcher: Launcher, paths: TrialPaths) -> None:
    for command in job.cell.provisions.setup:
        done = launcher.shell(command, timeout_s=job.limits.timeout_s, log=paths.run_dir / SETUP_LOG)
        if done.exit_code != 0:
            raise provision.ProvisionError(f"setup command {command!r} failed (exit {done.exit_code})")


def _environment(iso: Isolation, job: Job, provided: provision.Provided | None) -> dict[str, str]:
    env = {
        "os": platform.platform(),
        "python": platform.python_version(),
        "assay": _assay_version(),
        "isolation": iso.name,
        "tree_kill": "pidns" if proc.pidns_available() else "killpg (not guaranteed)",
        "network_off_enforced": str(
            not job.cell.provisions.network and (proc.pidns_available() or iso.enforces_network_off)
        ).lower(),
    }
    if job.version:
        env["tool_version"] = job.version
    if provided is not None:
        env["knowledge_links"] = provided.link_mode
    return env


def _unenforceable(job: Job, iso: Isolation) -> str | None:
    """Why the cell's network: off cannot hold here (the run is then invalid, not silently open)."""
    if job.cell.provisions.network or iso.enforces_network_off or proc.pidns_available():
        return None
    return f"network: off cannot be enforced (isolation {iso.name}, no network namespace on this machine)"


def _limits_applied(job: Job, launcher: Launcher | None) -> dict[str, str]:
    """Every limit of the trial as it applied: the runner's own, then the sandbox's."""
    lim = job.limits
    runner = {
        "timeout": f"{lim.timeout_s:g} s (runner)",
        "output": "off" if lim.output_bytes is None else f"{lim.output_bytes} bytes (runner)",
    }
    return runner | (limits.applied(launcher.limits, launcher.enforced) if launcher is not None else {})


def _assay_version() -> str:
    try:
        from importlib.metadata import version

        return version("assay")
    except Exception:  # not installed (run from a checkout)
        return "0+checkout"


def _sum_metrics(steps: list[StepRecord]) -> RunnerMetrics:
    if len(steps) == 1:
        return steps[0].metrics
    total: dict[str, Any] = {}
    for field in RunnerMetrics.model_fields:
        values = [getattr(s.metrics, field) for s in steps if getattr(s.metrics, field) is not None]
        if not values:
            continue
        total[field] = max(values) if field in ("peak_context", "context_limit") else sum(values)
    return RunnerMetrics(**total)


def _installed_version(run_dir: Path) -> str | None:
    """The CLI version a real-agent adapter read back from its binary (its agent.json)."""
    try:
        version = json.loads((run_dir / AGENT_INFO).read_text(encoding="utf-8")).get("version")
    except (OSError, ValueError, AttributeError):
        return None
    return version if isinstance(version, str) else None


def _extra(provided: provision.Provided | None, launcher: Launcher | None) -> dict[str, Any]:
    extra: dict[str, Any] = {"shimmed": list(provided.shimmed)} if provided else {}
    if launcher is not None and launcher.refused:
        extra["sandbox_refused"] = sorted(set(launcher.refused))
    if launcher is not None and launcher.isolation.name == "none":
        visible = ancestor_instruction_files(launcher.cwd)
        if visible:
            extra["host_instruction_files_visible"] = visible
    return extra


def run_trial(
    job: Job, *, project: Path, run_dir: Path, cancel: threading.Event | None = None, concurrent: bool = False
) -> RunRecord:
    """Run one trial into `run_dir` and return its run.json record (also written there).

    Args:
        job: The trial.
        project: The project root (holds generated/, scenarios/...); job paths are relative to it.
        run_dir: The trial's run directory; whatever an unfinished attempt left there is removed.
        cancel: Set to stop the trial (it is recorded as interrupted and rerun on resume).
        concurrent: Whether other trials share the machine (recorded; wall-clock not comparable).
    """
    project = project.resolve()
    run_dir = run_dir.resolve()
    start_run(run_dir, job)
    started = time.time()
    iso = select(job.options.isolation)
    fields: dict[str, Any] = {}
    steps: list[StepRecord] = []
    canary_results: tuple[CanaryResult, ...] = ()
    provided: provision.Provided | None = None
    session: Session | None = None
    launcher: Launcher | None = None
    argv: list[str] = []
    gateways = contextlib.ExitStack()  # the model gateway, when the agent has one (closed in finally)
    gw: gateway_trial.TrialGateway | None = None
    timings: dict[str, float] = {}
    clock = [time.perf_counter()]

    def lap(stage: str) -> None:
        now = time.perf_counter()
        timings[stage] = round(now - clock[0], 4)
        clock[0] = now

    try:
        paths = _paths(job, run_dir, project)
        links = tuple(job.cell.provisions.links)
        ws = workspace.create(project / job.scenario.seed, run_dir, exclude=links)
        lap("workspace")
        provision.make_dirs(paths)
        provided = provision.apply(job, project=project, paths=paths)
        lap("provision")
        argv = agent.command(job)
        args = agent.resolve_args(job, project=project, run_dir=run_dir)
        gw = gateways.enter_context(gateway_trial.for_trial(job, args, run_dir=run_dir, isolation=iso))
        env = build(job, paths, agent_args=gw.args if gw else args)
        env = gw.scrub(env) if gw else env
        carried = gw is not None and gw.carries_network  # every command of the trial behind the forwarder
        launcher = _launcher(
            job,
            paths,
            env,
            provided,
            iso,
            extra=(gw.mount(),) if gw else (),
            prefix=tuple(gw.wrap([])) if gw and carried else (),
        )
        for folder in (paths.workspace, paths.home, paths.tmp, paths.state, paths.run_dir / OUTBOX_DIR):
            hand_over(folder)  # before the baseline: handing over later would change every ctime
        _setup(job, launcher, paths)
        multistep.seed_state(job, launcher, paths)
        workspace.commit_baseline(ws)
        lap("setup_baseline")
        canary_results = canaries.run(job.cell.provisions.canaries, launcher)
        lap("canaries")
        fields["invalid"] = canaries.invalid_reason(canary_results) or _unenforceable(job, iso)
        # Setup and canaries ran the traced tool too; the trace is the agent's alone (the grader
        # counts every row as the agent's tool use), so their rows are kept aside.
        if paths.trace.is_file():
            paths.trace.replace(paths.run_dir / META_DIR / "pre-agent-trace.jsonl")
        session = Session(job, launcher, ws, paths, gw.wrap(argv) if gw and not carried else argv, cancel)
        sessions = multistep.sessions(job)
        for index, spec in enumerate(sessions, start=1):
            if spec.fresh_repo and index > 1:
                workspace.reset(ws)  # the working tree starts over; a treatment's state persists
            start = multistep.StepStart(ws, paths) if index > 1 else None
            placed = place_evidence(spec, project, ws)

            def restore(
                start: multistep.StepStart | None = start, spec: Step = spec, placed: list[Path] = placed
            ) -> None:
                if start is not None:
                    start.restore()
                else:
                    workspace.reset(ws)
                placed[:] = place_evidence(spec, project, ws)  # the reset removed them

            try:
                step, done = session.run(spec.prompt, spec.name, restore=restore)
            finally:
                remove_evidence(placed)
            steps.append(step)
            fields.update(exit_code=done.exit_code, timed_out=done.timed_out)
            fields["limits_hit"] = (
                tuple(n for n, hit in (("timeout", done.timed_out), ("output", done.output_capped)) if hit)
                + done.limits_hit
            )
            why = multistep.failure(spec, index, len(sessions), error=step.error, exit_code=done.exit_code)
            if why:  # the failed session's artifacts stay the run's own; later steps are not recorded
                fields["error"] = why
                break
            if index < len(sessions):
                stash_attempt(run_dir, step_dir_name(index))
                (run_dir / step_dir_name(index) / DIFF_FILE).write_bytes(workspace.diff(ws))
                multistep.end_session(job, paths, index)
        lap("agent")
        fields["unsafe_edits"] = capture.workspace(ws, job.scenario.writable, run_dir)
        lap("capture")
        fields["invalid"] = fields["invalid"] or capture.context_violation(paths)
    except Interrupted:
        fields["interrupted"] = True
        fields["error"] = "interrupted"
    except (
        Exception
    ) as exc:  # the per-trial boundary: any failure of this trial is data, never a crash of the matrix
        fields["error"] = f"{type(exc).__name__}: {exc}"
        fields["traceback"] = traceback.format_exc()
    finally:
        gateway_summary = gw.summary() if gw else None
        gateways.close()
    # The agent could write into its run dir; a verdict there is never its own to write.
    (run_dir / GRADE_FILE).unlink(missing_ok=True)
    record = RunRecord(
        **identity(job),
        agent_version=_installed_version(run_dir) or job.agent.version,
        agent_command=agent.describe(argv) if argv else "",
        started_at=started,
        ended_at=time.time(),
        environment=_environment(iso, job, provided),
        isolation=iso.name,
        infra_retries=session.retries if session else 0,
        canaries=canary_results,
        concurrent=concurrent,
        metrics=_sum_metrics(steps) if steps else RunnerMetrics(),
        steps=tuple(steps) if job.scenario.steps else (),
        protections=protections.measure(iso, neutralised=True) if launcher is not None else None,
        limits_applied=_limits_applied(job, launcher),
        sandbox_trees=dict(sorted(launcher.trees.items())) if launcher is not None else {},
        extra=_extra(provided, launcher)
        | ({"gateway": gateway_summary} if gateway_summary else {})
        | {"timings_s": timings},
        **fields,
    )
    write_record(run_dir / RUN_FILE, record)
    return record
