"""Resource limits of a confined command, and whether they were hit.

Measured on this kind of machine: cgroup v1 memory and pids controllers work as root
(v2 controllers are not delegated); `RLIMIT_AS`, `RLIMIT_FSIZE` and `RLIMIT_CPU` take
effect; `RLIMIT_NPROC` only for a non-root uid. So memory and processes use a per-trial
cgroup when one can be made, `RLIMIT_AS` for memory otherwise; file size and CPU time
are rlimits; the total size of the writable folders is kept by the kernel where the trial's
folders live on size-limited filesystems (`harness.sandbox.disk`), else watched from outside.

    with confine(isolation, spec, label=job_id, watch=(workspace,)) as box:
        result = run(box.argv, env=dict(spec.env))      # harness.sandbox.proc
        hits = box.limits_hit(result.returncode)         # e.g. ("memory",)

A hit is detectable after the fact: the cgroup's OOM-kill and pids-refusal counters,
the signal a killed process died of, a file cut exactly at the size limit, the watcher.
Some hits also end the command at once, because nothing useful follows them: a watched
folder past its size (the workspace, the outbox) and a refused fork (a fork bomb saturates
the pids limit and would otherwise spin until the timeout). The watcher polls every 0.25 s,
or four times as long as its last walk took (a huge workspace costs the agent little CPU).
A size the kernel keeps (a `disks` filesystem) is never a reason to end the command: the write
past it fails (ENOSPC), the agent carries on, and the hit is recorded when the filesystem was
seen full (`harness.sandbox.disk.full`, looked at by the watcher and after the command).
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.sandbox import disk
from harness.sandbox.identity import owner_tag
from harness.sandbox.isolation.base import Isolation, SandboxLimits, SandboxSpec
from harness.sandbox.isolation.cgroups import make_cgroup
from harness.sandbox.neutralise import TreeChanged, walk_tree

MIB = 1024 * 1024
SETTLE_S = 0.002
"""How often a finished command's cgroup is looked at again: its last processes (already killed
with the sandbox's pid namespace) leave within microseconds, and a command costs each wait."""
LIMIT_NAMES = ("memory", "pids", "file_size", "cpu", "workspace", "outbox")
"""Names a hit is recorded under (RunRecord.limits_hit also has timeout and output, the runner's)."""
KERNEL_FS = "tmpfs"
"""How a size limit is enforced when a filesystem of that size holds the folders (`enforced`)."""


def _sanitize(label: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in label)[-80:]


def tree_size(paths: Sequence[Path]) -> int:
    """Bytes on disk under these folders (allocated blocks: sparse files do not count)."""
    return _scan(paths)[0]


def _scan(paths: Sequence[Path], size_mark: int | None = None) -> tuple[int, bool]:
    """(bytes on disk under `paths`, whether a regular file is exactly `size_mark` bytes long).

    Walked on directory descriptors (`walk_tree`), so a folder deeper than PATH_MAX is counted
    too. A tree that changes mid-walk (the agent is still writing) gives what was seen so far.
    """
    total, marked = 0, False
    for root in paths:
        if not root.is_dir():
            continue
        with contextlib.suppress(OSError, TreeChanged):
            for entry in walk_tree(root):
                total += entry.st.st_blocks * 512
                marked = marked or (
                    size_mark is not None and entry.st.st_size == size_mark and entry.kind == "file"
                )
    return total, marked


@dataclass
class Confinement:
    """A wrapped command plus the limit machinery around it (use through `confine`)."""

    argv: list[str]
    limits: SandboxLimits
    cgroups: dict[str, Path]
    watch: tuple[Path, ...] = ()
    outbox: tuple[Path, ...] = ()
    on_exceed: Callable[[], None] | None = None
    disks: dict[str, Path] = field(default_factory=dict)
    """Size limit name -> a path on the filesystem of that size that holds its folders."""
    enforced: dict[str, str] = field(default_factory=dict)
    """Limit name -> how it is enforced ("cgroup", "rlimit", "watch"); absent: not enforced."""
    _hits: set[str] = field(default_factory=set)
    """Limits the watcher saw crossed (and ended the command for)."""
    _stop: threading.Event = field(default_factory=threading.Event)

    def _sizes(self) -> list[tuple[str, tuple[Path, ...], int]]:
        """The size limits the watcher keeps (those no filesystem keeps)."""
        sized = (
            ("workspace", self.watch, self.limits.workspace_mb),
            ("outbox", self.outbox, self.limits.outbox_mb),
        )
        return [
            (name, paths, mb * MIB)
            for name, paths, mb in sized
            if mb is not None and paths and name not in self.disks
        ]

    def _full(self) -> set[str]:
        return {name for name, path in self.disks.items() if disk.full(path)}

    def _crossed(self) -> str | None:
        if self._forks_refused():
            return "pids"
        for name, paths, limit in self._sizes():
            if tree_size(paths) > limit:
                return name
        return None

    def _forks_refused(self) -> bool:
        pids = self.cgroups.get("pids")
        if pids is None:
            return False
        with contextlib.suppress(OSError, ValueError):
            events = dict(line.split() for line in (pids / "pids.events").read_text().splitlines())
            return int(events.get("max", "0")) > 0
        return False

    def _watch(self) -> None:
        interval = 0.25
        while not self._stop.wait(interval):
            began = time.monotonic()
            self._hits |= self._full()  # refused by the kernel: recorded, the command goes on
            crossed = self._crossed()
            if crossed is not None:
                self._hits.add(crossed)
                self.kill()
                if self.on_exceed is not None:
                    self.on_exceed()
                return
            interval = max(0.25, 4 * (time.monotonic() - began))

    def start(self) -> None:
        """Start the watcher (confine does this) when there is a size or a pids limit to watch."""
        if self._sizes() or "pids" in self.cgroups or self.disks:
            threading.Thread(target=self._watch, daemon=True, name="assay-limits-watch").start()

    def pids(self) -> list[int]:
        """Processes still in the trial's cgroups."""
        found: set[int] = set()
        for path in self.cgroups.values():
            with contextlib.suppress(OSError):
                found.update(int(p) for p in (path / "cgroup.procs").read_text().split())
        return sorted(found)

    def kill(self) -> None:
        """SIGKILL every process left in the trial's cgroups (a backstop for the tree kill)."""
        deadline = time.monotonic() + 5
        while (left := self.pids()) and time.monotonic() < deadline:
            for pid in left:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(SETTLE_S)

    def limits_hit(self, returncode: int | None) -> tuple[str, ...]:
        """The limits the command hit, in LIMIT_NAMES order."""
        hits: set[str] = set()
        mem = self.cgroups.get("memory")
        if mem is not None:
            with contextlib.suppress(OSError, ValueError):
                stats = dict(line.split() for line in (mem / "memory.oom_control").read_text().splitlines())
                if int(stats.get("oom_kill", "0")) > 0:
                    hits.add("memory")
        if self._forks_refused():
            hits.add("pids")
        died_of = {-returncode, returncode - 128} if returncode is not None else set()
        mark = self.limits.file_size_mb * MIB if self.limits.file_size_mb is not None else None
        size, cut = _scan(self.watch, mark)
        if signal.SIGXFSZ in died_of or cut:
            hits.add("file_size")
        if signal.SIGXCPU in died_of:
            hits.add("cpu")
        hits |= self._hits | self._full()
        for name, paths, limit in self._sizes():
            if (size if paths == self.watch else tree_size(paths)) > limit:
                hits.add(name)
        return tuple(name for name in LIMIT_NAMES if name in hits)

    def close(self) -> None:
        """Stop the watcher, end what is left, remove the cgroups."""
        self._stop.set()
        self.kill()
        for path in self.cgroups.values():
            for _ in range(500):
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(SETTLE_S)


def _prefix(
    limits: SandboxLimits, cgroups: dict[str, Path], enforced: dict[str, str], inner: list[str]
) -> list[str]:
    """`inner` (the isolation's argv) started in the command's cgroups and under its rlimits.

    A shell joins the cgroups and sets the rlimits with `ulimit` (POSIX's -f counts 512-byte
    blocks; -t is seconds and -v KiB in dash, bash and busybox alike), then execs `inner`: no
    prlimit to start (every program started costs about a millisecond of CPU here), and when
    `inner` is itself a shell script (bwrap's steps under a root harness) one shell runs both.
    prlimit stays for RLIMIT_NPROC, which the shells spell differently (dash -p, bash -u).
    """
    steps = [f"echo $$ > {shlex.quote(str(path / 'cgroup.procs'))}" for path in cgroups.values()]
    if limits.file_size_mb is not None:
        steps.append(f"ulimit -f {limits.file_size_mb * MIB // 512}")
        enforced["file_size"] = "rlimit"
    if limits.cpu_s is not None:  # SIGXCPU at the soft limit first, a visible cause (soft before hard)
        steps += [f"ulimit -S -t {limits.cpu_s}", f"ulimit -H -t {limits.cpu_s + 2}"]
        enforced["cpu"] = "rlimit"
    if limits.memory_mb is not None and "memory" not in cgroups:
        steps.append(f"ulimit -v {limits.memory_mb * 1024}")
        enforced["memory"] = "rlimit"
    if limits.pids is not None and "pids" not in cgroups and os.geteuid() != 0:
        inner = [shutil.which("prlimit") or "prlimit", f"--nproc={limits.pids}", "--", *inner]
        enforced["pids"] = "rlimit"
    if not steps:
        return inner
    guard = " && ".join(steps)
    if inner[:2] == ["/bin/sh", "-c"] and len(inner) > 3:  # same $0 and "$@": the steps run first
        return ["/bin/sh", "-c", f"{guard} || exit\n{inner[2]}", *inner[3:]]
    return ["/bin/sh", "-c", f'{guard} && exec "$@"', "assay-limits", *inner]


@contextlib.contextmanager
def confine(
    isolation: Isolation,
    spec: SandboxSpec,
    *,
    label: str,
    watch: Sequence[Path] = (),
    outbox: Sequence[Path] = (),
    on_exceed: Callable[[], None] | None = None,
    disks: Mapping[str, Path] | None = None,
) -> Iterator[Confinement]:
    """Wrap spec with `isolation` and apply spec.limits; always cleans up its cgroups.

    Args:
        isolation: The plug-in that confines the command.
        spec: What the command may see and do.
        label: A name for the trial's cgroups (the job id).
        watch: Writable host folders whose total size spec.limits.workspace_mb caps.
        outbox: The folder(s) whose total size spec.limits.outbox_mb caps.
        on_exceed: Called when the watcher sees a limit crossed (after the cgroup kill),
            so a caller without cgroups can end its process tree.
        disks: Size limit name ("workspace", "outbox") -> a path on the size-limited filesystem
            that holds those folders (`harness.sandbox.disk`): the kernel keeps that limit, the
            watcher does not walk them.
    """
    limits = spec.limits
    box = Confinement(
        argv=[],
        limits=limits,
        cgroups={},
        watch=tuple(watch),
        outbox=tuple(outbox),
        on_exceed=on_exceed,
        disks={
            name: path for name, path in (disks or {}).items() if getattr(limits, f"{name}_mb") is not None
        },
    )
    try:  # from the first cgroup made: whatever happens, close() removes them
        _make_cgroups(box, label)
        box.argv = _prefix(limits, box.cgroups, box.enforced, isolation.wrap(spec))
        box.enforced.update({name: "watch" for name, _paths, _limit in box._sizes()})
        box.enforced.update(dict.fromkeys(box.disks, KERNEL_FS))
        box.start()
        yield box
    finally:
        box.close()


def _make_cgroups(box: Confinement, label: str) -> None:
    """The command's cgroups, into `box.cgroups` as each is made, and how they enforce its limits."""
    limits, cgroups = box.limits, box.cgroups
    # Named after this process too: a later harness removes what a killed one left (cgroups).
    name = f"{_sanitize(label)}-{uuid.uuid4().hex[:8]}-{owner_tag()}"
    # A memory cgroup even without a memory limit: kill() then finds strays of any isolation.
    mem_bytes = str(limits.memory_mb * MIB) if limits.memory_mb is not None else "-1"
    memory = make_cgroup(
        "memory", name, {"memory.limit_in_bytes": mem_bytes}, {"memory.memsw.limit_in_bytes": mem_bytes}
    )
    if memory is not None:
        cgroups["memory"] = memory
    if limits.pids is not None:
        pids = make_cgroup("pids", name, {"pids.max": str(limits.pids)}, {})
        if pids is not None:
            cgroups["pids"] = pids
    if limits.cpus is not None:
        period = 100_000
        quota = max(1000, int(limits.cpus * period))
        cpu = make_cgroup("cpu", name, {"cpu.cfs_period_us": str(period), "cpu.cfs_quota_us": str(quota)}, {})
        if cpu is not None:
            cgroups["cpu"] = cpu
    if "cpu" in cgroups:
        box.enforced["cpus"] = "cgroup"
    if memory is not None and limits.memory_mb is not None:
        box.enforced["memory"] = "cgroup"
    if "pids" in cgroups:
        box.enforced["pids"] = "cgroup"


_FIELDS = {
    "cpus": ("cpus", " CPUs"),
    "memory": ("memory_mb", " MB"),
    "pids": ("pids", ""),
    "file_size": ("file_size_mb", " MB"),
    "cpu": ("cpu_s", " s"),
    "workspace": ("workspace_mb", " MB"),
    "outbox": ("outbox_mb", " MB"),
}
"""Limit name -> (SandboxLimits field, unit as run.json shows it)."""


def applied(limits: SandboxLimits, enforced: dict[str, str]) -> dict[str, str]:
    """Each limit as run.json states it: "4096 MB (cgroup)", "off", or "1024 (not enforced here)"."""
    out: dict[str, str] = {}
    for name, (field_name, unit) in _FIELDS.items():
        value = getattr(limits, field_name)
        if value is None:
            out[name] = "off"
        else:
            out[name] = f"{value}{unit} ({enforced.get(name, 'not enforced here')})"
    return out


def stopping(hits: Sequence[str], enforced: Mapping[str, str]) -> tuple[str, ...]:
    """The hits that stopped the command: all but the sizes a filesystem keeps (the kernel refused
    the write; the agent went on and its work is graded)."""
    return tuple(name for name in hits if enforced.get(name) != KERNEL_FS)
