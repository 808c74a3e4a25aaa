"""Isolation benchmark: what confinement costs per process, and per-trial workspace preparation.

    python benchmarks/bench_isolation.py [--runs 40] [--files 2000] [--mb 50]

Figures printed:
- per-process start overhead: `/bin/true` run bare (none), under bwrap, under unshare,
  and under bwrap inside `confine` with memory+pids cgroups (median and p90, ms); then the
  namespaces alone (root only): a fork, `unshare` of the five namespaces a sandbox has, a fork
  and exec, against the same without namespaces -- the kernel's share of a launch, the rest being
  the programs started on the way (setpriv, the shells, chown, bwrap);
- per-trial overhead: a whole trial (`harness.trial.run_trial`: workspace, provisions,
  baseline commit, a command agent that exits at once, capture) under none, bwrap, unshare;
- workspace preparation for a seed of N files totalling M MB: a full copy
  (`shutil.copytree`, and the symlink-safe `harness.sandbox.pathsafe.copy_tree`) against an overlay
  (making upper/work folders plus the extra cost of mounting it in a bwrap sandbox);
- the size-limited filesystems of a trial (`harness.sandbox.disk`, root only): mount + close
  with empty folders, and with the seed copied in and the workspace copied out at the end,
  against the seed copied onto the run directory's disk as without them.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.sandbox.isolation import Mount, SandboxLimits, SandboxSpec, select  # noqa: E402
from harness.sandbox.isolation import overlay as overlays  # noqa: E402
from harness.sandbox.isolation.limits import confine  # noqa: E402
from harness.sandbox.pathsafe import copy_tree  # noqa: E402
from harness.trial.workspace import copy_tree as tar_copy  # noqa: E402


def _times(fn: Callable[[], None], runs: int) -> list[float]:
    fn()  # warm-up
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        out.append((time.perf_counter() - start) * 1000)
    return out


def _row(label: str, ms: list[float]) -> str:
    ms = sorted(ms)
    p90 = ms[min(len(ms) - 1, int(len(ms) * 0.9))]
    return f"  {label:<34} median {statistics.median(ms):8.1f} ms   p90 {p90:8.1f} ms   (n={len(ms)})"


def _spec(work: Path, **extra: object) -> SandboxSpec:
    return SandboxSpec(
        argv=["/bin/true"],
        cwd=work,
        env={"PATH": "/usr/bin:/bin"},
        home=work,
        mounts=(Mount(work, work, writable=True),),
        **extra,
    )  # type: ignore[arg-type]


def per_process(runs: int, work: Path) -> None:
    print("Per-process start overhead (/bin/true):")
    base = _times(lambda: subprocess.run(["/bin/true"], check=True), runs)
    print(_row("none", base))
    for name in ("bwrap", "unshare"):
        iso = select(name)
        reason = iso.probe()
        if reason is not None:
            print(f"  {name:<34} unavailable: {reason}")
            continue
        argv = iso.wrap(_spec(work))
        ms = _times(lambda argv=argv: subprocess.run(argv, env={"PATH": "/usr/bin:/bin"}, check=True), runs)
        print(_row(name, ms) + f"   +{statistics.median(ms) - statistics.median(base):.1f} ms over none")
    iso = select("bwrap")
    if iso.probe() is None:
        spec = _spec(work, limits=SandboxLimits(memory_mb=512, pids=256, file_size_mb=100))

        def limited() -> None:
            with confine(iso, spec, label="bench") as box:
                subprocess.run(box.argv, env=dict(spec.env), check=True)

        ms = _times(limited, runs)
        print(
            _row("bwrap + cgroups + rlimits", ms)
            + f"   +{statistics.median(ms) - statistics.median(base):.1f} ms over none"
        )
    namespaces_alone(runs)


_CLONE_NEW = {"mnt": 0x20000, "uts": 0x4000000, "ipc": 0x8000000, "pid": 0x20000000, "net": 0x40000000}
_LIBC = ctypes.CDLL(None, use_errno=True)


def _forked(flags: int) -> None:
    """Fork; the child unshares `flags`, forks again (the first process of a new pid namespace)
    and that one execs /bin/true: a launch with nothing but the namespaces, no program between."""
    pid = os.fork()
    if pid == 0:  # the child
        try:
            if flags and _LIBC.unshare(flags) != 0:
                os._exit(3)
            inner = os.fork()
            if inner == 0:
                os.execv("/bin/true", ["/bin/true"])
            os._exit(0 if os.waitpid(inner, 0)[1] == 0 else 1)
        except BaseException:
            os._exit(2)
    if os.waitpid(pid, 0)[1] != 0:
        raise SystemExit(f"unshare({flags:#x}) failed in the child")


def namespaces_alone(runs: int) -> None:
    """What the kernel's namespaces of a sandbox cost by themselves, against the same two forks
    and exec without them: the floor under any sandbox, however its processes are arranged."""
    if os.geteuid() != 0:
        print("  namespaces alone                   skipped: needs root (no user namespace here)")
        return
    every = sum(_CLONE_NEW.values())  # distinct bits
    bare = _times(lambda: _forked(0), runs)
    print(_row("fork, fork, exec (no namespaces)", bare))
    ms = _times(lambda: _forked(every), runs)
    print(
        _row(f"  + new {'/'.join(_CLONE_NEW)} ns", ms)
        + f"   {statistics.median(ms) - statistics.median(bare):+.1f} ms: the namespaces"
    )


def per_trial(runs: int, tmp: Path) -> None:
    from compiler.contract import AgentSpec, Cell, CheckSpec, Job, Limits, Options, ScenarioJob

    fixture = ROOT / "tests" / "fixtures" / "runner" / "project"
    project = tmp / "project"
    shutil.copytree(fixture, project, symlinks=True)
    scenario = ScenarioJob(
        id="fix",
        root="scenarios/fix",
        family="f",
        seed="scenarios/fix/seed",
        prompt="p\n",
        checks=(CheckSpec(id="c", kind="command", params={"run": "true"}),),
    )
    cell = Cell(name="none/none/off", levels={"network": "off"})
    print("Per-trial overhead (run_trial of a command agent that exits at once):")
    from harness.trial import run_trial

    base: float | None = None
    for name in ("none", "bwrap", "unshare"):
        if name != "none" and select(name).probe() is not None:
            print(f"  {name:<34} unavailable")
            continue
        job = Job(
            id="b/none/none/off/a/fix/t01",
            hash="h",
            matrix="b",
            trial=1,
            scenario=scenario,
            cell=cell,
            agent=AgentSpec(id="a", adapter="command", command="true"),
            limits=Limits(timeout_s=60),
            options=Options(isolation=name, infra_retries=0),
        )
        counter = iter(range(100_000))

        def one(job: Job = job, counter: Iterator[int] = counter) -> None:
            _check(run_trial(job, project=project, run_dir=tmp / f"{job.options.isolation}{next(counter)}"))

        ms = _times(one, max(10, runs // 2))
        base = statistics.median(ms) if base is None else base
        extra = "" if name == "none" else f"   +{statistics.median(ms) - base:.1f} ms over none"
        print(_row(name, ms) + extra)


def _check(record: object) -> None:
    error = getattr(record, "error", None)
    if error:
        raise RuntimeError(f"benchmark trial failed: {error}")


def make_seed(seed: Path, files: int, total_mb: int) -> None:
    size = total_mb * 1024 * 1024 // files
    blob = bytes(range(256)) * (size // 256 + 1)
    for i in range(files):
        folder = seed / f"pkg{i // 100:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"mod{i:04d}.py").write_bytes(blob[:size])


def workspace_prep(runs: int, tmp: Path, files: int, total_mb: int) -> None:
    seed = tmp / "seed"
    make_seed(seed, files, total_mb)
    print(f"Workspace preparation, seed of {files} files, {total_mb} MB:")
    counter = iter(range(10_000))

    def copytree() -> None:
        shutil.copytree(seed, tmp / f"copy{next(counter)}", symlinks=True)

    def safecopy() -> None:
        copy_tree(seed, tmp / f"copy{next(counter)}")

    def prepare() -> None:
        overlays.prepare(seed, tmp / f"ov{next(counter)}", Path("/ws"))

    n = max(3, runs // 8)
    print(_row("copy (shutil.copytree)", _times(copytree, n)))
    print(_row("copy (pathsafe.copy_tree)", _times(safecopy, n)))
    print(_row("overlay: make upper/work", _times(prepare, runs)))
    iso = select("bwrap")
    if iso.probe() is not None:
        print("  overlay mount: bwrap unavailable")
        return
    work = tmp / "w"
    work.mkdir()
    plain = iso.wrap(_spec(work))

    def with_overlay() -> None:
        ov = overlays.prepare(seed, tmp / f"ov{next(counter)}", work / "ws")
        subprocess.run(iso.wrap(_spec(work, overlays=(ov,))), env={"PATH": "/usr/bin:/bin"}, check=True)

    base = _times(lambda: subprocess.run(plain, env={"PATH": "/usr/bin:/bin"}, check=True), runs)
    ms = _times(with_overlay, runs)
    print(
        _row("overlay: prepare + bwrap with overlay", ms)
        + f"   +{statistics.median(ms) - statistics.median(base):.1f} ms over bwrap alone"
    )


def disk_limit(runs: int, tmp: Path, files: int, total_mb: int) -> None:
    import os

    from harness.sandbox import disk

    print("Size-limited filesystems of a trial (tmpfs per trial, copied out at its end):")
    if os.geteuid() != 0:
        print("  unavailable: the harness is not root")
        return
    seed = tmp / "seed"
    if not seed.exists():
        make_seed(seed, files, total_mb)
    made_runs = []
    for i in range(runs * 2 + 10):  # made beforehand: the figures time only what a trial adds
        made_runs.append(tmp / f"disk{i}")
        for name in ("workspace", "home", "tmp", "state", ".sandbox-out"):
            (made_runs[-1] / name).mkdir(parents=True)
    pending = iter(made_runs)

    def trial(*, copy: bool, limited: bool) -> None:
        run = next(pending)
        folders = [run / n for n in ("workspace", "home", "tmp", "state")]
        made = (
            disk.mount(run, folders, size_mb=1024, outbox=run / ".sandbox-out", outbox_mb=256)
            if limited
            else None
        )
        if copy:
            tar_copy(seed, run / "workspace")
        if made is not None:
            made.close()

    print(_row("mount + close, empty folders", _times(lambda: trial(copy=False, limited=True), runs)))
    n = max(3, runs // 8)
    plain = _times(lambda: trial(copy=True, limited=False), n)
    print(_row(f"seed copied to disk ({files} files)", plain))
    ms = _times(lambda: trial(copy=True, limited=True), n)
    print(
        _row("mount + seed in + copy-out + close", ms)
        + f"   +{statistics.median(ms) - statistics.median(plain):.1f} ms over the copy alone"
    )
    for run in made_runs:
        shutil.rmtree(run)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--mb", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="assay-bench-iso-") as raw:
        tmp = Path(raw)
        work = tmp / "proc"
        work.mkdir()
        per_process(args.runs, work)
        per_trial(args.runs, tmp)
        workspace_prep(args.runs, tmp, args.files, args.mb)
        disk_limit(args.runs, tmp, args.files, args.mb)
    return 0


if __name__ == "__main__":
    sys.exit(main())
