"""The per-trial cgroups (v1) that hold a confined command's memory, pids and CPU limits.

`make_cgroup` makes `/sys/fs/cgroup/<controller>/assay/<name>` with its settings, or returns None
where cgroups cannot be made (not root, no v1 controller). A cgroup is named after the harness
process that made it (`...-<owner tag>`, `harness.sandbox.identity.owner_tag`), so before the first
one a later harness process makes, it removes under every controller those of harness processes
that are gone (killed before they could clean up); a runner removes a dead worker's with `sweep`.
`harness.sandbox.isolation.limits` decides what goes in them and removes them after the command.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from harness.sandbox.identity import owner_gone

CGROUP_V1 = Path("/sys/fs/cgroup")
CONTROLLERS = ("memory", "pids", "cpu")
"""The controllers `harness.sandbox.isolation.limits` makes cgroups under."""


def _cgroup_root(controller: str) -> Path | None:
    root = CGROUP_V1 / controller
    if (
        os.geteuid() != 0
        or not (root / "cgroup.procs").exists()
        or (CGROUP_V1 / "cgroup.controllers").exists()
    ):
        return None
    return root


_SWEPT: list[bool] = []
"""Whether this process has swept (once: orphans come from processes killed before it started)."""

SETTLE_S = 1.0
"""How long `sweep` waits, in all, for the last processes of an abandoned cgroup to leave (killed
with their harness process, by the parent-death signal, they take milliseconds)."""


def sweep(*, settle_s: float = SETTLE_S) -> None:
    """Remove now, under every controller, the cgroups of harness processes that are gone (a
    runner's, after one of its workers died), waiting up to settle_s for those still emptying."""
    until = time.monotonic() + settle_s
    for controller in CONTROLLERS:
        root = _cgroup_root(controller)
        if root is not None:
            _remove_abandoned(root / "assay", until=until)


def _remove_abandoned(parent: Path, *, until: float = 0.0) -> None:
    """Remove the cgroups a killed harness process left behind (its pid is gone). A cgroup that
    still holds a process cannot be removed (EBUSY), so nothing running is touched; one is tried
    again until `until` (time.monotonic())."""
    with contextlib.suppress(OSError):
        for child in parent.iterdir():
            if child.is_dir() and owner_gone(child.name):
                _rmdir(child, until)


def _rmdir(path: Path, until: float) -> None:
    while True:
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:  # EBUSY: a process is still leaving it
            if time.monotonic() >= until:
                return
            time.sleep(0.005)


def make_cgroup(
    controller: str, name: str, settings: dict[str, str], optional: dict[str, str]
) -> Path | None:
    root = _cgroup_root(controller)
    if root is None:
        return None
    if not _SWEPT:  # every controller's: a command that makes no pids cgroup still finds those
        _SWEPT.append(True)
        sweep(settle_s=0)
    path = root / "assay" / name
    try:
        path.mkdir(parents=True)
        for key, value in settings.items():
            (path / key).write_text(value)
        for key, value in optional.items():  # e.g. swap accounting, present only when enabled
            with contextlib.suppress(OSError):
                (path / key).write_text(value)
    except OSError:
        with contextlib.suppress(OSError):
            path.rmdir()
        return None
    return path
