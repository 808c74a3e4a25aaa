"""The per-trial cgroups (v1) that hold a confined command's memory, pids and CPU limits.

`make_cgroup` makes `/sys/fs/cgroup/<controller>/assay/<name>` with its settings, or returns None
where cgroups cannot be made (not root, no v1 controller). A cgroup is named after the harness
process that made it (`...-p<pid>`), so the first one a later harness makes under a parent first
removes those of harness processes that are gone (killed before they could clean up).
`harness.sandbox.isolation.limits` decides what goes in them and removes them after the command.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from harness.sandbox.identity import owner_gone

CGROUP_V1 = Path("/sys/fs/cgroup")


def _cgroup_root(controller: str) -> Path | None:
    root = CGROUP_V1 / controller
    if (
        os.geteuid() != 0
        or not (root / "cgroup.procs").exists()
        or (CGROUP_V1 / "cgroup.controllers").exists()
    ):
        return None
    return root


_SWEPT: set[Path] = set()
"""The cgroup parents this process has swept (once each: orphans come from processes killed before
this one started)."""


def _sweep(parent: Path) -> None:
    """Remove the cgroups a killed harness process left behind (its pid is gone). A cgroup that
    still holds a process cannot be removed (EBUSY), so nothing running is touched."""
    if parent in _SWEPT:
        return
    _SWEPT.add(parent)
    with contextlib.suppress(OSError):
        for child in parent.iterdir():
            if child.is_dir() and owner_gone(child.name):
                with contextlib.suppress(OSError):
                    child.rmdir()


def make_cgroup(
    controller: str, name: str, settings: dict[str, str], optional: dict[str, str]
) -> Path | None:
    root = _cgroup_root(controller)
    if root is None:
        return None
    _sweep(root / "assay")
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
