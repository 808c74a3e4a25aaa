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
import shutil
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from compiler.contract import Job
from harness import agents, canaries, capture, proc, provision, workspace
from harness.environment import TrialPaths, build
from harness.gateway import trial as gateway_trial
from harness.isolation import Isolation, Mount, SandboxLimits, select
from harness.launch import Launcher
from harness.records import (
    RUN_FILE,
    CanaryResult,
    RunnerMetrics,
    RunRecord,
    StepRecord,
    write_atomic,
    write_record,
)
from harness.rundirs import JOB_FILE, clear
from harness.snapshots import Watcher

INFRA_EXIT = 75
AGENT_FILES = ("agent.log", "usage.jsonl", "transcript.jsonl", "context.json")


class _Interrupted(Exception):
    """The trial was cancelled (Ctrl-C)."""


def _paths(job: Job, run_dir: Path, project: Path) -> TrialPaths:
    skill = job.cell.provisions.skill_dir
    return TrialPaths(
        run_dir=run_dir,
        workspace=run_dir / "workspace",
        home=run_dir / "home",
        tmp=run_dir / "tmp",
        state=run_dir / "state",
        shim_bin=run_dir / ".assay" / "bin",
        skill_dir=run_dir / "skill" if skill else None,
        agent_cache=project / ".cache" / "agents" / job.agent.id,
    )


OUTBOX = ".sandbox-out"
"""The folder the sandbox sees at the run directory's path (see `harness.pathsafe.collect`)."""


def _launcher(
    job: Job,
    paths: TrialPaths,
    env: dict[str, str],
    provided: provision.Provided,
    iso: Isolation,
    extra: tuple[Mount, ...] = (),
) -> Launcher:
    lim = job.limits
    # Only the adapters package, not the checkout that holds it: that may hold scenarios and .git.
    code_dirs = {Path(sys.prefix), Path(sys.base_prefix), agents.CODE_ROOT / "adapters"}
    outbox = paths.run_dir / OUTBOX
    outbox.mkdir(exist_ok=True)
    own = [paths.workspace, paths.home, paths.tmp, paths.state]
    assay_dir = paths.shim_bin.parent  # the shim, and the oracle's copy of the reference
    read_only = [p for p in (assay_dir, paths.skill_dir, paths.agent_cache) if p is not None and p.exists()]
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
        network=job.cell.provisions.network,
        limits=SandboxLimits(
            memory_mb=lim.memory_mb,
            pids=lim.pids,
            file_size_mb=lim.file_size_mb,
            workspace_mb=lim.workspace_mb,
        ),
        ro_binds=provided.ro_binds,
        outbox=(outbox, paths.run_dir),
        watch=(paths.workspace, paths.home, paths.tmp, paths.state),
        label=job.id,
    )


def _setup(job: Job, launcher: Launcher, paths: TrialPaths) -> None:
    commands = [*job.cell.provisions.setup, *job.cell.provisions.state_setup, *job.scenario.state_setup]
    for command in commands:
        done = launcher.shell(command, timeout_s=job.limits.timeout_s, log=paths.run_dir / "setup.log")
        if done.exit_code != 0:
            raise provision.ProvisionError(f"setup command {command!r} failed (exit {done.exit_code})")


def _stash_attempt(run_dir: Path, label: str) -> None:
    """Move an attempt's adapter outputs aside so the next attempt starts clean."""
    dest = run_dir / label
    dest.mkdir(parents=True, exist_ok=True)
    for name in AGENT_FILES:
        if (run_dir / name).exists():
            shutil.move(str(run_dir / name), dest / name)


class _Session:
    """Runs the adapter for one session, with exit-75 retries."""

    def __init__(
        self,
        job: Job,
        launcher: Launcher,
        ws: workspace.Workspace,
        paths: TrialPaths,
        argv: list[str],
        cancel: threading.Event | None,
    ) -> None:
        self.job, self.launcher, self.ws, self.paths, self.argv, self.cancel = (
            job,
            launcher,
            ws,
            paths,
            argv,
            cancel,
        )
        self.retries = 0

    def run(self, prompt: str, name: str) -> tuple[StepRecord, proc.ProcResult]:
        watch = self.job.scenario.watch or self.job.scenario.entry
        started = time.time()
        for attempt in range(self.job.options.infra_retries + 1):
            with Watcher(self.ws.root, watch, self.paths.run_dir / "snapshots"):
                done = self.launcher.run(
                    self.argv,
                    stdin=prompt.encode("utf-8"),
                    timeout_s=self.job.limits.timeout_s,
                    log=self.paths.agent_log,
                    output_cap=self.job.limits.output_bytes,
                    cancel=self.cancel,
                )
            if done.cancelled:
                raise _Interrupted()
            if done.exit_code != INFRA_EXIT or attempt == self.job.options.infra_retries:
                break
            self.retries += 1
            _stash_attempt(self.paths.run_dir, f"retries/{name}-attempt-{attempt + 1:02d}")
            workspace.reset(self.ws)
        error = None
        if done.timed_out:
            error = f"agent timed out after {self.job.limits.timeout_s:g} s"
        elif done.output_capped:
            error = f"agent output passed the cap of {self.job.limits.output_bytes} bytes"
        elif done.exit_code == INFRA_EXIT:
            error = f"infrastructure failure: adapter exited {INFRA_EXIT} after {self.retries} retries"
        elif done.limits_hit:  # like a timeout: stopped by the harness, so never graded as a pass
            error = f"agent hit its {', '.join(done.limits_hit)} limit"
        metrics = capture.metrics(self.paths, duration_s=done.duration_s)
        step = StepRecord(
            name=name,
            started_at=started,
            ended_at=time.time(),
            exit_code=done.exit_code,
            error=error,
            metrics=metrics,
        )
        return step, done


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


def _extra(provided: provision.Provided | None, launcher: Launcher | None) -> dict[str, Any]:
    extra: dict[str, Any] = {"shimmed": list(provided.shimmed)} if provided else {}
    if launcher is not None and launcher.refused:
        extra["sandbox_refused"] = sorted(set(launcher.refused))
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
    clear(run_dir)
    run_dir.mkdir(parents=True)
    write_atomic(run_dir / JOB_FILE, json.dumps(job.model_dump(mode="json"), indent=2, sort_keys=True) + "\n")
    started = time.time()
    iso = select(job.options.isolation)
    fields: dict[str, Any] = {}
    steps: list[StepRecord] = []
    canary_results: tuple[CanaryResult, ...] = ()
    provided: provision.Provided | None = None
    session: _Session | None = None
    launcher: Launcher | None = None
    argv: list[str] = []
    gateways = contextlib.ExitStack()  # the model gateway, when the agent has one (closed in finally)
    gw: gateway_trial.TrialGateway | None = None
    try:
        paths = _paths(job, run_dir, project)
        links = tuple(job.cell.provisions.links)
        ws = workspace.create(project / job.scenario.seed, run_dir, exclude=links)
        provision.make_dirs(paths)
        provided = provision.apply(job, project=project, paths=paths)
        argv = agents.command(job)
        args = agents.resolve_args(job, project=project, run_dir=run_dir)
        gw = gateways.enter_context(gateway_trial.for_trial(job, args, run_dir=run_dir, isolation=iso))
        env = build(job, paths, agent_args=gw.args if gw else args)
        env = gw.scrub(env) if gw else env
        launcher = _launcher(job, paths, env, provided, iso, extra=(gw.mount(),) if gw else ())
        _setup(job, launcher, paths)
        workspace.commit_baseline(ws)
        canary_results = canaries.run(job.cell.provisions.canaries, launcher)
        fields["invalid"] = canaries.invalid_reason(canary_results)
        session = _Session(job, launcher, ws, paths, gw.wrap(argv) if gw else argv, cancel)
        sessions = [(s.prompt, s.name) for s in job.scenario.steps] or [(job.scenario.prompt, "main")]
        for index, (prompt, name) in enumerate(sessions, start=1):
            step, done = session.run(prompt, name)
            steps.append(step)
            if index < len(sessions):
                _stash_attempt(run_dir, f"steps/step-{index:02d}")
                (run_dir / "steps" / f"step-{index:02d}" / "diff.patch").write_bytes(workspace.diff(ws))
            fields.update(exit_code=done.exit_code, timed_out=done.timed_out)
            fields["limits_hit"] = (
                tuple(n for n, hit in (("timeout", done.timed_out), ("output", done.output_capped)) if hit)
                + done.limits_hit
            )
            if step.error:
                fields["error"] = step.error
                break
        fields["unsafe_edits"] = capture.workspace(ws, job.scenario.writable, run_dir)
        fields["invalid"] = fields["invalid"] or capture.context_violation(paths)
    except _Interrupted:
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
    record = RunRecord(
        job_id=job.id,
        job_hash=job.hash,
        matrix=job.matrix,
        scenario=job.scenario.id,
        cell=job.cell.name,
        levels=dict(job.cell.levels),
        control=job.cell.control,
        agent=job.agent.id,
        trial=job.trial,
        version=job.version,
        model=job.agent.model,
        agent_version=job.agent.version,
        agent_command=agents.describe(argv) if argv else "",
        started_at=started,
        ended_at=time.time(),
        environment=_environment(iso, job, provided),
        isolation=iso.name,
        infra_retries=session.retries if session else 0,
        canaries=canary_results,
        concurrent=concurrent,
        metrics=_sum_metrics(steps) if steps else RunnerMetrics(),
        steps=tuple(steps) if len(steps) > 1 else (),
        extra=_extra(provided, launcher) | ({"gateway": gateway_summary} if gateway_summary else {}),
        **fields,
    )
    write_record(run_dir / RUN_FILE, record)
    return record
