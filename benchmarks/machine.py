"""What the machine did while a benchmark ran: its load, and its CPU time across every process and
kernel thread (`/proc/stat`). That counts what a command's own rusage misses (a namespace torn down
by a kernel worker after the sandbox's last process ended), and, on a shared machine, the others'
work too: read it beside the load, on a quiet machine.

    cost = measured(run_something, arg)   # run_something returns its wall seconds
    print(cost.wall, cost.cpu, cost.steal, load())
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.1f}/{five:.1f} on {os.cpu_count()} cores"


class Cost(NamedTuple):
    """One measured command: wall seconds, and the machine's busy and stolen CPU seconds meanwhile."""

    wall: float
    cpu: float
    """Every process and kernel thread (/proc/stat): a namespace torn down after its sandbox's last
    process ended (kernel workers) counts too, where the command's rusage would miss it."""
    steal: float
    """Taken by the hypervisor for other guests: how much the wall time is the host's noise."""


def cpu_seconds() -> tuple[float, float]:
    """(busy, steal) CPU seconds of the whole machine since boot, from /proc/stat's first line."""
    user, nice, system, _idle, _iowait, irq, softirq, steal = (
        int(n) for n in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]
    )
    tick = os.sysconf("SC_CLK_TCK")
    return (user + nice + system + irq + softirq) / tick, steal / tick


def measured(command: Callable[..., float], *args: Any, **kwargs: Any) -> Cost:
    """Run `command(*args, **kwargs)` (it returns its wall seconds) and what the machine's CPUs did
    meanwhile."""
    busy, steal = cpu_seconds()
    wall = command(*args, **kwargs)
    busy_after, steal_after = cpu_seconds()
    return Cost(wall, busy_after - busy, steal_after - steal)
