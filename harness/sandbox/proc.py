"""The one subprocess wrapper: timeout, output cap, stdin, log file, and the end of the whole tree.

A process-group kill does not reach a child that double-forked and called setsid, so where
the machine allows it (root, or unprivileged user namespaces) the command runs as pid 1 of
a fresh pid namespace (`unshare --pid --fork --kill-child --mount-proc`): when pid 1 dies
the kernel kills every process left in the namespace. The same namespace carries the
read-only bind mounts the runner asks for and, when `network` is False, an empty network
namespace. Without namespaces it falls back to setsid + killpg and says so in
`ProcResult.tree_kill` ("killpg": ending the tree is not guaranteed).

`setpriv --pdeathsig KILL` ties each launcher to the thread that started it, so a runner
killed with SIGKILL takes its running trials with it instead of leaving them orphaned.
"""

from __future__ import annotations

import contextlib
import functools
import os
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from harness.sandbox.gate import Gate
from harness.sandbox.identity import sandbox_ids

CHUNK = 65536
GRACE_S = 1.0
POLL_S = 0.1

# Runs inside the new namespaces before the command: bind the read-only folders, bring
# the loopback up, then exec the command so it stays pid 1 of the namespace.
_PRELUDE = (
    'while [ "$1" != "--" ]; do '
    'mount --bind "$1" "$2" && mount -o remount,bind,ro "$2" || exit 125; shift 2; done; shift; '
    '[ -n "$ASSAY_LO_UP" ] && ip link set lo up 2>/dev/null; unset ASSAY_LO_UP; '
    'exec "$@"'
)


@dataclass(frozen=True)
class ProcResult:
    """How one command ended."""

    exit_code: int | None
    """Exit status; negative for a signal; None when the harness ended it (timeout, cap, cancel)."""
    timed_out: bool
    output_capped: bool
    cancelled: bool
    duration_s: float
    output_bytes: int
    """Bytes the command wrote to stdout+stderr (counted past the cap too, until it was killed)."""
    output: bytes
    """Captured output (only when capture=True; at most the cap)."""
    tree_kill: str
    """How the tree was ended: "pidns" (guaranteed) or "killpg" (not guaranteed)."""
    limits_hit: tuple[str, ...] = ()
    """Resource limits the command hit (memory, pids, file_size, cpu, workspace), set by the launcher."""


_PROBING = threading.Lock()
"""Held while the launcher's probes are first answered: threads that ask at once start one probe."""


def pidns_available() -> bool:
    """True when commands can run as pid 1 of a new pid namespace here."""
    with _PROBING:
        return _pidns_probe()


@functools.cache
def _pidns_probe() -> bool:
    if shutil.which("unshare") is None:
        return False
    try:
        done = subprocess.run(
            ["unshare", "--pid", "--fork", "--kill-child", "--mount-proc", "--net", "true"],
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def _pdeathsig_prefix() -> tuple[str, ...]:
    with _PROBING:
        return _pdeathsig_probe()


@functools.cache
def _pdeathsig_probe() -> tuple[str, ...]:
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return ()
    done = subprocess.run([setpriv, "--pdeathsig", "KILL", "true"], capture_output=True, check=False)
    return (setpriv, "--pdeathsig", "KILL") if done.returncode == 0 else ()


def warm() -> None:
    """Find out what this machine's launcher can do (a pid namespace, a parent-death signal)
    before a pool starts, so its forked workers inherit the answers instead of each probing."""
    pidns_available()
    _pdeathsig_prefix()


def launcher_argv(
    argv: Sequence[str],
    *,
    network: bool = True,
    ro_binds: Sequence[tuple[Path, Path]] = (),
    namespaces: bool = True,
) -> tuple[list[str], str]:
    """The full argv that runs `argv` with tree ending, and the tree-kill mode it gives.

    `namespaces=False`: argv is a sandbox that is a pid namespace of its own (its whole tree ends
    with it), with its own network namespace and mounts (bwrap, unshare); a second layer of
    each would only cost a process start and a network namespace per command.
    """
    if not namespaces:
        return [*_pdeathsig_prefix(), *argv], "pidns"
    if pidns_available():
        ns = ["unshare", "--pid", "--fork", "--kill-child", "--mount-proc"]
        if not network:
            ns.append("--net")
        binds = [str(p) for pair in ro_binds for p in pair]
        full = [*_pdeathsig_prefix(), *ns, "sh", "-c", _PRELUDE, "assay-launch", *binds, "--", *argv]
        return full, "pidns"
    return [*_pdeathsig_prefix(), *argv], "killpg"


def _pump(
    src: IO[bytes],
    sink: IO[bytes] | None,
    keep: bytearray | None,
    cap: int,
    state: dict[str, int],
    gate: Gate | None = None,
    failed: list[OSError] | None = None,
) -> None:
    """Read the command's output to its end: into the log and memory, up to the cap. A log that
    cannot be written (its disk full) goes into `failed` and is written no more; the output is
    still read, so the command never blocks on it before the caller ends it."""
    while True:
        chunk = src.read1(CHUNK) if hasattr(src, "read1") else src.read(CHUNK)
        if not chunk:
            return
        if gate is not None:
            chunk = gate.feed(chunk)  # the first phase's output is the gate's, not the command's
            if not chunk:
                continue
        room = cap - state["written"]
        state["seen"] += len(chunk)
        if room > 0:
            part = chunk[:room]
            if sink is not None:
                try:
                    sink.write(part)
                    sink.flush()
                except OSError as exc:
                    (failed if failed is not None else []).append(exc)
                    sink = None
            if keep is not None:
                keep.extend(part)
            state["written"] += len(part)


def _feed(dst: IO[bytes], data: bytes, gate: Gate | None = None) -> None:
    try:
        if gate is not None:
            if not gate.wait():
                return  # the phase never ended (or its outcome was refused): the command never starts
            data = b"go\n" + data
        dst.write(data)
    except (BrokenPipeError, OSError):
        pass
    finally:
        with contextlib.suppress(OSError):
            dst.close()


class _ExitWaiter:
    """Waits for a process to exit, waking the moment it does.

    A pidfd makes the wait wake on exit instead of polling (Popen.wait(timeout) sleeps in
    growing steps, which costs a short command tens of milliseconds).
    """

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self._proc = proc
        self._fd: int | None = None
        self._poller = select.poll()
        try:
            self._fd = os.pidfd_open(proc.pid)
            self._poller.register(self._fd, select.POLLIN)
        except (AttributeError, OSError):
            self._fd = None

    def __call__(self, seconds: float) -> bool:
        """True once the process has exited (waiting up to `seconds`)."""
        if self._fd is None:
            return _poll_wait(self._proc, seconds)
        return bool(self._poller.poll(int(seconds * 1000)))

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _poll_wait(proc: subprocess.Popen[bytes], t: float) -> bool:
    try:
        proc.wait(timeout=t)
    except subprocess.TimeoutExpired:
        return False
    return True


def end_tree(proc: subprocess.Popen[bytes]) -> None:
    """End a command started in a session of its own and its whole group (TERM, then KILL)."""
    for sig, wait in ((signal.SIGTERM, GRACE_S), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            if sig == signal.SIGKILL:
                return
        except subprocess.TimeoutExpired:
            continue
    # The launcher is gone; a survivor of killpg (fallback mode only) is out of reach.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


def sandbox_pipe(*, child_end: int) -> tuple[int, int]:
    """A pipe whose child end (0: read, 1: write) belongs to the sandbox's uid when that is not
    ours: a command that reopens its stdin or stdout (`> /dev/stdout`, pytest's
    `--junitxml=/dev/fd/3`) is otherwise refused by a pipe that root made with mode 0600."""
    ends = os.pipe()
    ids = sandbox_ids()
    if ids.switched:
        os.fchown(ends[child_end], ids.uid, ids.gid)
    return ends


def run(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    stdin: bytes | None = None,
    timeout_s: float | None = None,
    log: Path | None = None,
    output_cap: int | None = 10_000_000,
    capture: bool = False,
    network: bool = True,
    ro_binds: Sequence[tuple[Path, Path]] = (),
    cancel: threading.Event | None = None,
    namespaces: bool = True,
    gate: Gate | None = None,
) -> ProcResult:
    """Run a command to its end (or the harness's), then make sure its whole tree is gone.

    Args:
        argv: The command.
        cwd: Working directory.
        env: The complete environment (nothing is inherited).
        stdin: Bytes fed on stdin, then closed; None gives /dev/null.
        timeout_s: Wall-clock limit; the tree is killed when it passes.
        log: File receiving stdout+stderr (appended), at most `output_cap` bytes.
        output_cap: Output past this many bytes ends the command (None: no cap).
        capture: Also return the output in memory.
        network: False runs the command in an empty network namespace (when namespaces work).
        ro_binds: (source, target) folders bind-mounted read-only inside the command's namespace.
        cancel: Set from another thread to end the command early (Ctrl-C).
        namespaces: False when argv is a sandbox with namespaces of its own (see `launcher_argv`);
            `network` and `ro_binds` are then the sandbox's to enforce.
        gate: argv is `gate.wrap(phase, command)`: the phase runs first, its output is the gate's;
            stdin, the timeout, the output cap and the duration are the command's, from the gate
            on (`harness.sandbox.gate`).

    Raises:
        OSError: the log could not be written (its disk full, say); the command was ended.
    """
    full, mode = launcher_argv(argv, network=network, ro_binds=ro_binds, namespaces=namespaces)
    cap = sys.maxsize if output_cap is None else output_cap
    run_env = dict(env)
    if mode == "pidns" and not network:
        run_env["ASSAY_LO_UP"] = "1"
    sink = log.open("ab") if log is not None else None
    keep = bytearray() if capture else None
    state = {"written": 0, "seen": 0}
    failed: list[OSError] = []  # what writing the log met, in the reader: raised once the tree is gone
    start = time.monotonic()
    timed_out = capped = cancelled = broken = False
    if gate is not None:
        gate.began = start
    try:
        out_r, out_w = sandbox_pipe(child_end=1)
        in_r, in_w = sandbox_pipe(child_end=0) if stdin is not None or gate is not None else (None, None)
        try:
            proc = subprocess.Popen(
                full,
                cwd=cwd,
                env=run_env,
                stdin=in_r if in_r is not None else subprocess.DEVNULL,
                stdout=out_w,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        finally:
            os.close(out_w)
            if in_r is not None:
                os.close(in_r)
        stdout = os.fdopen(out_r, "rb")
        reader = threading.Thread(
            target=_pump, args=(stdout, sink, keep, cap, state, gate, failed), daemon=True
        )
        reader.start()
        if in_w is not None:
            feed = os.fdopen(in_w, "wb")
            threading.Thread(target=_feed, args=(feed, stdin or b"", gate), daemon=True).start()
        exited = _ExitWaiter(proc)
        while True:
            if exited(POLL_S):
                proc.wait()
                exited.close()
                break
            deadline = (
                gate.deadline(timeout_s)
                if gate is not None
                else None
                if timeout_s is None
                else start + timeout_s
            )
            if deadline is not None and time.monotonic() >= deadline:
                timed_out = True
            elif state["seen"] > cap:
                capped = True
            elif cancel is not None and cancel.is_set():
                cancelled = True
            elif failed:  # the log cannot be written: the run is the harness's failure, not worth going on
                broken = True
            if timed_out or capped or cancelled or broken:
                exited.close()
                if gate is not None:
                    gate.close()  # what the phase prints while it is ended opens nothing
                end_tree(proc)
                break
        # pid 1 is gone, so the namespace is empty; in fallback mode end stragglers of the group.
        if mode == "killpg":
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
        reader.join(timeout=5.0)
        if not reader.is_alive():
            # A straggler that escaped killpg may still hold the pipe; closing it under the
            # blocked reader would deadlock, so the daemon reader is left to it.
            stdout.close()
    finally:
        if sink is not None:
            try:
                sink.close()
            except OSError as exc:  # what the reader could not write either
                failed.append(exc)
        if gate is not None:
            gate.close()
    if failed:
        raise OSError(failed[0].errno, failed[0].strerror, str(log)) from failed[0]
    ended_by_us = timed_out or capped or cancelled
    return ProcResult(
        exit_code=None if ended_by_us else proc.returncode,
        timed_out=timed_out,
        output_capped=capped,
        cancelled=cancelled,
        duration_s=time.monotonic() - (gate.at if gate is not None and gate.at is not None else start),
        output_bytes=state["seen"],
        output=bytes(keep) if keep is not None else b"",
        tree_kill=mode,
    )
