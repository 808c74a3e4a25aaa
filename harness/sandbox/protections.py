"""Which of the sandbox's protections hold here, measured rather than assumed.

A probe sandbox of the isolation (once per isolation and harness process) creates a file in a
writable folder and reports, from inside, its capabilities, its mount options and whether it
can make a user namespace; the harness then reads the file's owner from outside. The result
goes into every run.json (`protections`), and `failed` names each protection that did not
hold, so the CLI can say it on stderr and the report can count the runs.

    held = measure(select("bwrap"))       # Protections(uid_unprivileged=True, ...)
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from harness.artifacts.sandbox_sections import Protections
from harness.sandbox.isolation.base import Isolation, Mount, SandboxSpec

_PROBE = (
    "touch owned; grep -E '^(CapEff|NoNewPrivs):' /proc/self/status; "
    'grep -F " $PWD " /proc/self/mountinfo | head -n 1 | sed "s/^/MOUNT /"; '
    "unshare -U true >/dev/null 2>&1 && echo USERNS-CREATED; true"
)


def _parse(out: str) -> tuple[bool, bool, bool]:
    fields = dict(
        line.split(":", 1) for line in out.splitlines() if line.startswith(("CapEff:", "NoNewPrivs:"))
    )
    caps = fields.get("CapEff", "").strip().strip("0") == "" and fields.get("NoNewPrivs", "").strip() == "1"
    mount = next((line for line in out.splitlines() if line.startswith("MOUNT ")), "")
    # mountinfo: "id parent dev root point OPTIONS ..."; per-mount options are the sixth field.
    parts = mount.split()
    options = set(parts[6].split(",")) if len(parts) > 6 else set()
    return caps, {"nosuid", "nodev"} <= options, "USERNS-CREATED" not in out


_MEASURED: dict[str, Protections] = {}
"""Probe results of this process, by plug-in class and name (a probe costs a sandbox start)."""


def _measure(isolation: Isolation) -> Protections:
    key = f"{type(isolation).__module__}.{type(isolation).__qualname__}:{isolation.name}"
    if key not in _MEASURED:
        _MEASURED[key] = _probe(isolation)
    return _MEASURED[key]


def _probe(isolation: Isolation) -> Protections:
    failed: list[str] = []
    with tempfile.TemporaryDirectory(prefix="assay-protections-") as scratch:
        folder = Path(scratch) / "w"
        folder.mkdir()
        spec = SandboxSpec(
            argv=["/bin/sh", "-c", _PROBE],
            cwd=folder,
            env={"PATH": "/usr/bin:/bin:/usr/sbin:/sbin", "HOME": str(folder)},
            home=folder,
            mounts=(Mount(folder, folder, writable=True),),
        )
        try:
            done = subprocess.run(
                isolation.wrap(spec),
                env=dict(spec.env),
                cwd=folder,
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            out = done.stdout
            owner = (folder / "owned").lstat().st_uid if (folder / "owned").exists() else None
        except (OSError, RuntimeError, subprocess.TimeoutExpired) as exc:
            out, owner = "", None
            failed.append(f"the probe sandbox did not run: {exc}")
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    caps, nosuid, userns_blocked = _parse(out)
    if owner is None:
        failed.append("no file made by the probe sandbox to read its host owner from")
    elif owner == 0:
        failed.append("the sandbox runs as host root (uid 0): files it writes are root's on the host")
    if not nosuid:
        failed.append("the sandbox's writable folders are not mounted nosuid,nodev")
    if not caps:
        failed.append("the sandbox keeps capabilities or may gain privileges (no_new_privs unset)")
    if not userns_blocked:
        failed.append("the sandbox can create user namespaces")
    return Protections(
        isolation=isolation.name,
        sandbox_uid=owner,
        uid_unprivileged=owner is not None and owner != 0,
        nosuid_nodev=nosuid,
        capabilities_dropped=caps,
        userns_blocked=userns_blocked,
        failed=tuple(failed),
    )


def measure(isolation: Isolation, *, neutralised: bool = False) -> Protections:
    """The protections of `isolation` on this machine (probed once per process).

    Args:
        isolation: The plug-in the trial runs under.
        neutralised: True when the caller neutralised every agent-writable tree after each
            command (the launcher does); recorded as `setuid_stripped`.
    """
    held = _measure(isolation)
    if neutralised:
        return held.model_copy(update={"setuid_stripped": True})
    return held.model_copy(
        update={
            "failed": (*held.failed, "agent-written trees were not neutralised before the harness read them")
        }
    )
