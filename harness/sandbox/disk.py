"""Size-limited filesystems for everything a trial's agent can write: limits the kernel keeps.

The size watcher of `harness.sandbox.isolation.limits` polls, and between two of its looks a loop
of `fallocate` calls filled this machine's whole disk. So where the harness may mount (it is
root), each trial's writable folders live on filesystems of their own size:

- one tmpfs of `workspace_mb` at `<run>/.disk`, whose folders are bound at their usual places in
  the run directory (`workspace`, `home`, `tmp`, `state`: one limit for their total);
- one tmpfs of `outbox_mb` at the outbox (`<run>/.sandbox-out`, emptied after every command, so
  its limit is per command).

Both are `nosuid,nodev`, with one inode per KB of their size (empty files cost kernel memory that
`size=` does not count). A write past the limit fails with ENOSPC; the host's disk is never
asked for a byte of it. A tmpfs is memory: its pages are charged to the writer's memory cgroup
(the agent's memory limit covers its files too) and cost RAM until the trial ends.

`TrialDisk.close` copies the folders out to the run directory's own disk (`fdtree.mirror_tree`: on
directory descriptors, any depth and any name; FIFOs and sockets made anew and never opened;
holes and hard links kept; devices never copied; never more bytes than the filesystem held) and
unmounts, whatever the copy-out met. Every mount is named after the harness process that made it
(`assay-disk-p<pid>`; in a forked worker `assay-disk-p<runner>w<worker>`,
`harness.sandbox.identity.owner_tag`), so what a killed one left is removed by the first trial of
a later harness, or by its runner once the worker is gone (`sweep`).

    disk = mount(run_dir, [run_dir / "workspace", ...], size_mb=1024, outbox=..., outbox_mb=256)
    ...                                   # the trial: its folders are real files on a tmpfs
    disk.close()                          # copied out, unmounted
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.artifacts.names import DISK_DIR
from harness.sandbox import fdtree
from harness.sandbox.identity import owner_gone, owner_tag

SOURCE = "assay-disk"
"""Prefix of every mount's source name (`assay-disk-<owner tag>`, as /proc/self/mountinfo shows it)."""
FULL = 0.95
"""A filesystem this full (or out of inodes) counts as its limit hit: the agent was refused, or
nearly so (a write the kernel refused leaves no trace but a full filesystem)."""
MIB = 1024 * 1024
_MS_NOSUID, _MS_NODEV, _MS_REMOUNT, _MS_BIND = 2, 4, 32, 4096
_MNT_DETACH = 2
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class DiskUnavailable(OSError):
    """No size-limited filesystem could be made here (the reason is the message)."""


@functools.cache
def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = (ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p)
    libc.umount2.argtypes = (ctypes.c_char_p, ctypes.c_int)
    return libc


def _mount(source: str, target: Path, fstype: str | None, flags: int, data: str | None = None) -> None:
    """mount(2) itself: a mount(8) process per call would cost milliseconds."""
    done = _libc().mount(
        source.encode(),
        os.fsencode(target),
        fstype.encode() if fstype else None,
        flags,
        data.encode() if data else None,
    )
    if done != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), str(target))


def _umount(target: Path | bytes) -> bool:
    """Unmount; lazily (detached) when something still holds it, so nothing can keep it; False
    when it was no mount. (A plain umount costs about 0.4 ms here, a detach 5 ms.)"""
    point = target if isinstance(target, bytes) else os.fsencode(target)
    libc = _libc()
    return bool(libc.umount2(point, 0) == 0 or libc.umount2(point, _MNT_DETACH) == 0)


def _source() -> str:
    return f"{SOURCE}-{owner_tag()}"


def _unescape(field_: str) -> bytes:
    """A mountinfo path: spaces, tabs, newlines and backslashes are written as octal escapes."""
    raw = field_.encode("utf-8", "surrogateescape")
    out, i = bytearray(), 0
    while i < len(raw):
        if raw[i : i + 1] == b"\\" and raw[i + 1 : i + 4].isdigit():
            out.append(int(raw[i + 1 : i + 4], 8))
            i += 4
        else:
            out.append(raw[i])
            i += 1
    return bytes(out)


def _owner_gone(source: str) -> bool:
    return source.startswith(SOURCE + "-p") and owner_gone(source)


def sweep() -> list[bytes]:
    """Detach every assay disk whose harness process is gone (killed mid-trial); returns their
    mount points. What they held is lost with them: the trial never finished, it runs again."""
    try:
        lines = (
            Path("/proc/self/mountinfo").read_text(encoding="utf-8", errors="surrogateescape").splitlines()
        )
    except OSError:
        return []
    stale: list[bytes] = []
    for line in lines:
        head, sep, tail = line.partition(" - ")
        parts, fs = head.split(), tail.split()
        if sep and len(parts) > 4 and len(fs) > 1 and _owner_gone(fs[1]):
            stale.append(_unescape(parts[4]))
    for point in reversed(stale):  # binds and inner mounts first
        _umount(point)
    return stale


_SWEPT: list[bool] = []
"""Whether this process has swept (once: stale disks come from processes gone before it started)."""


def sweep_once() -> None:
    """`sweep`, the first time this process asks (a runner, before it clears a run directory that a
    killed runner may have left mounted)."""
    if not _SWEPT and os.geteuid() == 0:
        _SWEPT.append(True)
        sweep()


def usage(path: Path) -> tuple[float, bool]:
    """(share of the filesystem's blocks in use, whether it is out of inodes) of the one holding path."""
    st = os.statvfs(path)
    used = (st.f_blocks - st.f_bfree) / st.f_blocks if st.f_blocks else 0.0
    return used, st.f_files > 0 and st.f_ffree == 0


def full(path: Path) -> bool:
    """Whether the filesystem holding path reached its limit (see FULL)."""
    try:
        share, no_inodes = usage(path)
    except OSError:
        return False
    return share >= FULL or no_inodes


@dataclass
class TrialDisk:
    """One trial's size-limited filesystems (made by `mount`; `close` ends them)."""

    own: Path | None
    """The tmpfs holding the agent's own folders (None: their size is not limited here)."""
    folders: tuple[Path, ...]
    """Where those folders are bound (their place in the run directory)."""
    outbox: Path | None
    """The outbox's tmpfs (None: its size is not limited here)."""
    budget: int
    """Bytes the copy-out may write (the own filesystem's size)."""
    skipped: list[str] = field(default_factory=list)
    """What the copy-out left out, printable, with why."""
    failed: int = 0
    """Entries the copy-out could not write (a problem of the host's side, e.g. its disk full)."""

    @property
    def limits(self) -> dict[str, Path]:
        """Limit name -> a path on the filesystem that enforces it."""
        found = {"workspace": self.own, "outbox": self.outbox}
        return {name: path for name, path in found.items() if path is not None}

    def close(self) -> str | None:
        """Copy the folders out to the run directory's disk, then unmount everything (also when the
        copy-out fails or is interrupted); returns what went wrong on the host's side (entries not
        copied out), else None."""
        try:
            if self.own is not None:
                self._copy_out(self.own)
        finally:
            for folder in self.folders:  # those the copy-out did not get to
                _umount(folder)
            self.folders = ()
            if self.own is not None:
                _umount(self.own)
                with contextlib.suppress(OSError):
                    self.own.rmdir()
                self.own = None
            if self.outbox is not None:
                _umount(self.outbox)  # collected after every command: what is left was refused
                self.outbox = None
        if self.failed:
            first = next((s for s in self.skipped if not s.endswith(fdtree.AGENT_CAUSED)), "")
            return f"{self.failed} entries could not be copied out of the trial's size-limited filesystem (first: {first})"
        return None

    def _copy_out(self, own: Path) -> None:
        own_dev = os.stat(own).st_dev
        left = [self.budget]
        while self.folders:
            folder, self.folders = self.folders[0], self.folders[1:]
            _umount(folder)
            with contextlib.suppress(OSError):
                if os.stat(folder).st_dev == own_dev:  # still the tmpfs: never copy a tree onto itself
                    self.skipped.append(f"{folder.name}/ (could not be unmounted: left on the tmpfs)")
                    continue
            failures: list[str] = []
            left_out = fdtree.mirror_tree(own / folder.name, folder, left, failures)
            self.skipped += [f"{folder.name}/{s}" for s in left_out]
            self.failed += len(failures)


def limit_scratch(folder: Path, size_mb: int | None) -> Callable[[], None]:
    """Mount a tmpfs of size_mb (mode 0700, `nosuid,nodev`) on the empty folder `folder`, a
    grading scratch where check commands run code the agent wrote; returns what unmounts it (the
    content goes with it). Nothing is mounted without a size or where the harness may not mount."""
    if not size_mb or os.geteuid() != 0:
        return lambda: None
    sweep_once()
    try:
        _mount(_source(), folder, "tmpfs", _MS_NOSUID | _MS_NODEV, _options(size_mb, mode="0700"))
    except OSError:
        return lambda: None

    def release() -> None:
        _umount(folder)

    return release


def mount(
    run_dir: Path, folders: Sequence[Path], *, size_mb: int | None, outbox: Path | None, outbox_mb: int | None
) -> TrialDisk:
    """Put `folders` (in run_dir) on one tmpfs of size_mb and the outbox on one of outbox_mb.

    A size that is None or 0 gets no filesystem (its limit is off, or the watcher keeps it).

    Raises:
        DiskUnavailable: the harness may not mount here (not root, or the kernel refused).
    """
    if os.geteuid() != 0:
        raise DiskUnavailable("the harness is not root, so it cannot mount a size-limited filesystem")
    sweep_once()
    own = run_dir / DISK_DIR if size_mb else None
    disk = TrialDisk(own=None, folders=(), outbox=None, budget=(size_mb or 0) * MIB)
    try:
        if own is not None:
            own.mkdir(mode=0o755)
            _mount(_source(), own, "tmpfs", _MS_NOSUID | _MS_NODEV, _options(size_mb or 0))
            disk.own = own
            for folder in folders:
                (own / folder.name).mkdir(mode=0o755)
                folder.mkdir(mode=0o755, exist_ok=True)
                _mount(str(own / folder.name), folder, None, _MS_BIND)
                disk.folders += (folder,)
                _mount("none", folder, None, _MS_REMOUNT | _MS_BIND | _MS_NOSUID | _MS_NODEV)
        if outbox is not None and outbox_mb:
            outbox.mkdir(mode=0o755, exist_ok=True)
            _mount(_source(), outbox, "tmpfs", _MS_NOSUID | _MS_NODEV, _options(outbox_mb))
            disk.outbox = outbox
    except OSError as exc:
        disk.close()
        raise DiskUnavailable(f"no size-limited filesystem could be mounted: {exc.strerror or exc}") from exc
    except BaseException:  # nothing half-made outlives the call
        disk.close()
        raise
    return disk


def _options(size_mb: int, *, mode: str = "0755") -> str:
    return f"size={size_mb}m,nr_inodes={max(1024, size_mb * 1024)},mode={mode}"
