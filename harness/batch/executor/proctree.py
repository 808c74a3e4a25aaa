"""Finding and ending a process tree on Linux, including children that escaped its group.

A worker runs each trial as a child process; ending it must also end whatever it started,
even a grandchild that called setsid. The trial process makes itself a child subreaper, so
orphans of its tree are re-parented to it rather than to init and stay findable here.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import time
from pathlib import Path

_PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Make this process adopt orphaned descendants (Linux); False where that is unsupported."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _parents() -> dict[int, int]:
    """pid -> parent pid of every visible process."""
    table: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # The command name may hold spaces and parentheses; the fields after the last ')' do not.
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 1:
            table[int(entry.name)] = int(fields[1])
    return table


def descendants(pid: int) -> list[int]:
    """Every live descendant of pid (not pid itself), parents before children."""
    children: dict[int, list[int]] = {}
    for child, parent in _parents().items():
        children.setdefault(parent, []).append(child)
    found: list[int] = []
    stack = list(children.get(pid, []))
    while stack:
        current = stack.pop()
        found.append(current)
        stack.extend(children.get(current, []))
    return found


def _signal(pids: list[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def kill_descendants(pid: int | None = None, *, rounds: int = 5) -> int:
    """SIGKILL every descendant of pid (default: this process); returns how many were signalled.

    Repeated a few times because a process may fork between the scan and the kill.
    """
    root = os.getpid() if pid is None else pid
    total = 0
    for _ in range(rounds):
        found = descendants(root)
        if not found:
            break
        _signal(found, signal.SIGKILL)
        total += len(found)
        time.sleep(0.05)
    return total


def kill_tree(pid: int) -> None:
    """SIGKILL pid, its process group and every descendant found under it."""
    found = descendants(pid)
    _signal([pid, *found], signal.SIGSTOP)  # freeze first so nothing forks out of reach meanwhile
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    _signal([pid, *found, *descendants(pid)], signal.SIGKILL)
