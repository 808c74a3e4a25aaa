"""Provision, the second stage of a trial: the agent's world as the cell says, proven before it starts.

Files into the workspace or HOME, knowledge folders linked read-only, the skill folder, the
tracing shim in front of PATH, the state directory (seeded by `state_setup`), the model
gateway, the sandbox, setup commands, the baseline commit, then the canaries (made ready to run
first in the agent's own launch: `Ready.first`). Everything that
is not the workspace lives in the run directory, so a sandbox that shows the agent only the run
directory shows it everything it may use and nothing of the project. A step's evidence files
are provisions too, placed for that step only.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from compiler.contract import Job, Step
from harness.artifacts.names import META_DIR, OUTBOX_DIR, SETUP_LOG
from harness.artifacts.prices import load_prices
from harness.gateway import Meter, model_route
from harness.sandbox import pathsafe, proc
from harness.sandbox.gate import Gate
from harness.sandbox.identity import hand_over
from harness.sandbox.isolation import Isolation, Mount
from harness.sandbox.launch import Launcher
from harness.sandbox.scenario import (
    View,
    copy_mounts,
    environment_of,
    needs_view,
    refuse_without_mounts,
    view,
)
from harness.trial import agent, canaries, environment, shim, tracing
from harness.trial.environment import SYSTEM_PATH, TrialPaths
from harness.trial.workspace import Workspace, commit_baseline, copy_tree

if TYPE_CHECKING:
    from harness.trial.prepare import Trial
    from harness.trial.record import Outcome


PROBE_TIMEOUT_S = 60.0
PRE_AGENT_TRACE = "pre-agent-trace.jsonl"
"""Under `.assay/`: the trace rows of setup commands and canaries (not the agent's tool use)."""


class ProvisionError(RuntimeError):
    """A provision could not be applied (missing source, failing setup command)."""


class EvidenceBlocked(ProvisionError):
    """A step's evidence cannot be placed: a file or link where it goes, or a path that leaves the
    workspace. Before a later step that is what the agent left in its tree (its own doing: the run is
    graded as it stands); before the first, the scenario's."""


class StateSetupError(RuntimeError):
    """A state_setup command failed or wrote outside the state directory."""


@dataclass(frozen=True)
class Provided:
    """What provisioning set up, for the launcher and run.json."""

    ro_binds: tuple[tuple[Path, Path], ...]
    mounts: tuple[Mount, ...]
    shimmed: tuple[str, ...]
    link_mode: str
    """How knowledge links are read-only: "bind" (a read-only mount) or "copy" (a read-only copy)."""


class FirstPhase(NamedTuple):
    """The canaries and the launch probe, to run in the agent's own launch before it
    (`harness.sandbox.gate`): one sandbox start for all three."""

    script: str
    gate: Gate
    finish: Callable[[str], None]
    """Called after that launch with how it ended ("timed out", "launch exit 1"): the canaries'
    verdicts onto the trial's record; raises AdapterCannotStart when the probe failed."""
    alone: Callable[[], None]
    """The launch probe in a launch of its own (when the phase never ended, before the agent's)."""


class Ready(NamedTuple):
    """What the run stage needs: the sandbox and the agent's command line in it."""

    launcher: Launcher
    argv: list[str]
    """The adapter's command, behind the gateway's forwarder when the gateway carries only the model."""
    first: FirstPhase | None = None
    """The canaries, still to run, before the agent in its first launch."""
    later: str = ""
    """The phase of every later launch of the adapter (a retry, a later step): the launch check,
    passing what the agent could have changed itself (`agent.probe_phase(agent_ran=True)`)."""


def provide(trial: Trial, out: Outcome) -> Ready:
    """Put the cell's world in place; returns the agent's sandbox and the canaries that prove it.

    The canaries run in the agent's first launch, before it (`Ready.first`); their verdict (and
    an unenforceable `network: off`) lands on `out.fields["invalid"]`: an invalid run still runs,
    and the report counts it apart.
    """
    job, paths = trial.job, trial.paths
    make_dirs(paths)
    out.provided = provided = apply(job, project=trial.project, paths=paths)
    out.lap("provision")
    out.argv = agent.command(job)
    args = agent.resolve_args(job, project=trial.project, run_dir=paths.run_dir)
    meter = budget_meter(job, trial.project)
    route = model_route.for_trial(job, args, run_dir=paths.run_dir, isolation=out.iso, meter=meter)
    gw = out.gateway = out.closing.enter_context(route)
    if meter is not None:
        if gw is not None and gw.gateway.routes.get(model_route.ROUTE) is not None:
            out.meter = meter
        else:
            out.budget_note = (
                "not enforced: no model gateway (isolation none)"
                if out.iso.name == "none"
                else "not enforced: the agent names no model endpoint (base_url) for the gateway to carry"
            )
    seen = scenario_view(job, trial.project, paths, out.iso)
    env = environment.build(job, paths, agent_args=gw.args if gw else args)
    env = seen.variables(env, after=str(paths.shim_bin)) if seen else env
    env = gw.scrub(env) if gw else env
    key_env = (gw.args if gw else args).get("api_key_env")
    if isinstance(key_env, str) and key_env not in env:  # the adapter would exit 75: not the agent's doing
        where = (
            "is not passed into the sandbox (options.env_pass)"
            if key_env in os.environ
            else "is not set here"
        )
        raise agent.AdapterCannotStart(f"agent {job.agent.id!r}: its API key variable {key_env} {where}")
    carried = gw is not None and gw.carries_network  # every command of the trial behind the forwarder
    tracing_route = tracing.for_trial(paths.shim_bin.parent / shim.TOOLS_FILE, provided.shimmed)
    tracer = out.tracer = out.closing.enter_context(tracing_route)
    if tracer is not None:
        env[environment.TRACE_VAR] = str(tracer.mirror)  # what it ran, readable; not the graded trace
    launcher = out.launcher = environment.launcher(
        job,
        paths,
        env,
        provided,
        out.iso,
        extra=(*((gw.mount(),) if gw else ()), *((tracer.mount(),) if tracer else ())),
        prefix=tuple(gw.wrap([])) if gw and carried else (),
        seen=seen,
        hook=tracer,
        disks=trial.disk.limits if trial.disk is not None else None,
    )
    if out.iso.name != "none":  # the sandbox's uid owns its folders; without one, commands run as we do
        for folder in (paths.workspace, paths.home, paths.tmp, paths.state, paths.run_dir / OUTBOX_DIR):
            hand_over(folder)  # before the baseline: handing over later would change every ctime
    setup(job, launcher, paths)
    seed_state(job, launcher, paths)
    commit_baseline(trial.ws)
    out.lap("setup_baseline")
    out.fields["invalid"] = canaries.unenforceable(job, out.iso)
    found = canaries.phase(job.cell.provisions.canaries)
    if found is not None:
        out.closing.callback(found.close)  # its loopback listener, whatever becomes of the trial
    first = _first_phase(job, found, launcher, paths, out)
    later = agent.probe_phase(job, out.argv, agent_ran=True)
    return Ready(launcher, gw.wrap(out.argv) if gw and not carried else out.argv, first, later)


def _first_phase(
    job: Job, found: canaries.Phase | None, launcher: Launcher, paths: TrialPaths, out: Outcome
) -> FirstPhase:
    """The canaries, then the launch probe (`probe_launch`), as the first phase of the agent's launch."""
    script = (found.script if found else "") + agent.probe_phase(job, out.argv)
    timeout_s = (found.timeout_s if found else 0.0) + PROBE_TIMEOUT_S
    gate = Gate(timeout_s=timeout_s, opened=lambda _output: keep_trace_aside(paths, out.tracer))

    def finish(ended: str) -> None:
        out.carve("canaries", gate.phase_s or 0.0)
        if found is not None:
            out.canaries = canaries.verdicts(found, gate.output, ended=ended)
            out.fields["invalid"] = canaries.invalid_reason(out.canaries) or canaries.unenforceable(
                job, out.iso
            )
        refused = agent.probe_failure(gate.output)
        if refused is not None:  # the probe failed: the adapter never started
            (paths.run_dir / META_DIR / "launch-probe.log").write_bytes(refused[1])
            raise agent.AdapterCannotStart(refused[0])

    return FirstPhase(script, gate, finish, lambda: probe_launch(job, launcher, out.argv, paths))


def keep_trace_aside(paths: TrialPaths, tracer: tracing.Collector | None) -> None:
    """Setup and canaries ran the traced tool too; the trace is the agent's alone (the grader
    counts every row as the agent's tool use), so the collector's rows so far are kept aside,
    before the agent starts (every row of a finished invocation is in: the runner answers the
    shim only once the collector has the row)."""
    if tracer is not None:
        tracing.keep_aside(tracer.take(), paths.run_dir / META_DIR / PRE_AGENT_TRACE)


def scenario_view(job: Job, project: Path, paths: TrialPaths, iso: Isolation) -> View | None:
    """What the scenario shows the agent: its workdir, its mounts (writable ones copied into the run
    directory, where the grader finds their final state), its environment (built once)."""
    scenario = job.scenario
    if not needs_view(scenario) and scenario.environment is None and not scenario.env:
        return None
    refuse_without_mounts(scenario, iso.name)
    copy_mounts(scenario, project, paths.run_dir)
    built = environment_of(scenario, project)
    return view(
        scenario, project, paths.workspace, mounts_root=paths.run_dir, checks=False, environment=built
    )


def probe_launch(job: Job, launcher: Launcher, argv: list[str], paths: TrialPaths) -> None:
    """The sandbox starts and the adapter's program and files are in it, or the run failed to run
    (a harness-side cause is never graded as the agent's failure)."""
    log = paths.run_dir / META_DIR / "launch-probe.log"
    done = launcher.run(agent.launch_probe(job, argv), timeout_s=60, log=log)
    if done.exit_code != 0:
        tail = log.read_text(encoding="utf-8", errors="replace").strip()[-500:] if log.is_file() else ""
        raise agent.AdapterCannotStart(
            f"the adapter cannot start in the sandbox (exit {done.exit_code}): {tail}"
        )


def budget_meter(job: Job, project: Path) -> Meter | None:
    """The meter of the trial's budgets (None without any); a money budget needs the price table."""
    budgets = job.limits.budgets()
    if not budgets:
        return None
    prices = load_prices(project) if "cost_usd" in budgets else None
    if "cost_usd" in budgets and prices is None:
        raise ProvisionError("the cost_usd budget needs specs/prices.yaml to price the model's tokens")
    return Meter(budgets, prices)


def _src(project: Path, rel: str, what: str) -> Path:
    path = (project / rel).resolve()
    if not path.exists():
        raise ProvisionError(f"{what} {rel!r} does not exist under {project}")
    return path


def _inside(root: Path, rel: str) -> Path:
    dest = (root / rel).resolve()
    if dest != root.resolve() and root.resolve() not in dest.parents:
        raise ProvisionError(f"{rel!r} leaves {root}")
    return dest


def _read_only_copy(src: Path, dest: Path) -> None:
    copy_tree(src, dest)
    for path in [dest, *dest.rglob("*")]:
        if not path.is_symlink():
            mode = path.stat().st_mode
            path.chmod(mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def make_dirs(paths: TrialPaths) -> None:
    """The trial's own folders (HOME, TMPDIR, state, shim)."""
    for folder in (paths.home, paths.tmp, paths.state, paths.shim_bin, paths.agent_cache):
        folder.mkdir(parents=True, exist_ok=True)


def apply(job: Job, *, project: Path, paths: TrialPaths) -> Provided:
    """Put the cell's provisions in place (before the baseline commit; they are not edits)."""
    prov = job.cell.provisions
    for dest, src in sorted(prov.files.items()):
        target = _inside(paths.workspace, dest)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(_src(project, src, "file"), target)
    for dest, src in sorted(prov.home_files.items()):
        target = _inside(paths.home, dest)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(_src(project, src, "home file"), target)
    skill = prov.skill_dir or None
    if skill is not None and paths.skill_dir is not None:
        copy_tree(_src(project, skill, "skill folder"), paths.skill_dir)
    binds: list[tuple[Path, Path]] = []
    mounts: list[Mount] = []
    mode = "bind" if proc.pidns_available() else "copy"
    for name, src in sorted(prov.links.items()):
        source = _src(project, src, "knowledge folder")
        target = _inside(paths.workspace, name)
        if mode == "bind":
            target.mkdir(parents=True, exist_ok=True)
            binds.append((source, target))
        else:
            _read_only_copy(source, target)
        mounts.append(Mount(src=source, dest=target, writable=False))
    path_dirs = [_src(project, rel, "PATH folder") for rel in prov.path]
    mounts.extend(Mount(src=d, dest=d, writable=False) for d in path_dirs)
    shimmed = shim.install(
        paths.shim_bin,
        path_dirs=path_dirs,
        trace_names=prov.trace,
        serve=prov.serve,
        search_path=SYSTEM_PATH,
    )
    mounts.extend(Mount(src=real.parent, dest=real.parent, writable=False) for real in set(shimmed.values()))
    return Provided(
        ro_binds=tuple(binds), mounts=tuple(mounts), shimmed=tuple(sorted(shimmed)), link_mode=mode
    )


def setup(job: Job, launcher: Launcher, paths: TrialPaths) -> None:
    """The cell's setup commands, in the agent's sandbox; a failing one fails the trial."""
    for command in job.cell.provisions.setup:
        done = launcher.shell(command, timeout_s=job.limits.timeout_s, log=paths.run_dir / SETUP_LOG)
        if done.exit_code != 0:
            raise ProvisionError(f"setup command {command!r} failed (exit {done.exit_code})")


def _tree(root: Path) -> dict[str, tuple[int, int, int]]:
    """(size, mtime_ns, mode) of every file under root, symlinks not followed; folders by existence."""
    found: dict[str, tuple[int, int, int]] = {}
    for dirpath, dirs, files in os.walk(root):
        for name in dirs:
            found[str((Path(dirpath) / name).relative_to(root)) + "/"] = (0, 0, 0)
        for name in files:
            path = Path(dirpath) / name
            st = path.lstat()
            found[str(path.relative_to(root))] = (st.st_size, st.st_mtime_ns, st.st_mode)
    return found


def seed_state(job: Job, launcher: Launcher, paths: TrialPaths) -> tuple[str, ...]:
    """Run the state_setup commands (levels, then scenario); returns those that ran.

    Raises:
        StateSetupError: a command failed, or it changed the working tree.
    """
    if not job.cell.provisions.state_dir:  # the state carries over only then
        return ()
    commands = (*job.cell.provisions.state_setup, *job.scenario.state_setup)
    for command in commands:
        before = _tree(paths.workspace)
        done = launcher.shell(
            f'cd "$BENCH_STATE_DIR" && {command}',
            timeout_s=job.limits.timeout_s,
            log=paths.run_dir / SETUP_LOG,
        )
        if done.exit_code != 0:
            raise StateSetupError(f"state_setup command {command!r} failed (exit {done.exit_code})")
        after = _tree(paths.workspace)
        touched = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
        if touched:
            shown = ", ".join(touched[:5]) + (f" (+{len(touched) - 5} more)" if len(touched) > 5 else "")
            raise StateSetupError(
                f"state_setup command {command!r} wrote into the working tree ({shown}); "
                "it may write only to $BENCH_STATE_DIR"
            )
    return commands


def place_evidence(step: Step, project: Path, ws: Workspace) -> list[Path]:
    """Materialise a step's evidence files (present only during that step, never graded)."""
    placed: list[Path] = []
    for dest, src in sorted(step.evidence.items()):
        try:  # the agent of an earlier step may have planted links to redirect this write
            target = pathsafe.resolve_inside(ws.root, dest)
            if target.exists() or target.is_symlink():
                raise EvidenceBlocked(
                    f"evidence {dest!r} of step {step.name!r} collides with a workspace file"
                )
            pathsafe.write_inside(ws.root, dest, (project / src).read_bytes())
        except pathsafe.PathEscape as exc:
            raise EvidenceBlocked(f"evidence {dest!r} of step {step.name!r}: {exc}") from exc
        placed.append(target)
    return placed


def remove_evidence(placed: list[Path]) -> None:
    """Take a step's evidence files away again (they are never graded)."""
    for path in placed:
        path.unlink(missing_ok=True)
