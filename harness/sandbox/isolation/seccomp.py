"""A seccomp filter that refuses new user namespaces, for sandboxes started by a root harness.

Under a root harness bwrap runs without a user namespace of its own (the agent is an
unprivileged host uid, see `harness.sandbox.identity`), so its `--disable-userns` is not
available. This filter does the same job the way container runtimes do: `unshare` and
`clone` with CLONE_NEWUSER fail with EPERM, and `clone3` (whose flags a filter cannot read)
fails with ENOSYS, which makes libc fall back to `clone`. Everything else is allowed.

The program is classic BPF, built here for the machine's architecture (and its 32-bit
compat mode); on an architecture without a table the filter is unavailable and run.json says
that user namespaces are not blocked.
"""

from __future__ import annotations

import atexit
import errno
import functools
import platform
import shutil
import struct
from pathlib import Path
from typing import NamedTuple

CLONE_NEWUSER = 0x10000000
X32_SYSCALL_BIT = 0x40000000

_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JSET_K = 0x45  # BPF_JMP | BPF_JSET | BPF_K
_AND_K = 0x54  # BPF_ALU | BPF_AND | BPF_K
_RET_K = 0x06  # BPF_RET | BPF_K
_ALLOW = 0x7FFF0000
_ERRNO = 0x00050000
_OFF_NR, _OFF_ARCH, _OFF_ARG0 = 0, 4, 16  # struct seccomp_data (args[0]'s low word, little endian)


class Arch(NamedTuple):
    """Syscall numbers of one ABI."""

    audit: int
    """AUDIT_ARCH_* value the kernel reports in seccomp_data.arch."""
    clone: int
    unshare: int
    clone3: int
    x32: bool = False
    """Also match x32 calls (the number with X32_SYSCALL_BIT set)."""


TABLES: dict[str, tuple[Arch, ...]] = {
    "x86_64": (Arch(0xC000003E, 56, 272, 435, x32=True), Arch(0x40000003, 120, 310, 435)),
    "aarch64": (Arch(0xC00000B7, 220, 97, 435), Arch(0x40000028, 120, 337, 435)),
}
"""Per machine: its native ABI, then its 32-bit compat ABI."""


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def _arch_block(arch: Arch) -> list[bytes]:
    """nr checks for one ABI; assumes A = arch and ends in a return."""
    deny = _ERRNO | errno.EPERM
    body = [_op(_LD_W_ABS, _OFF_NR)]
    if arch.x32:
        body.append(_op(_AND_K, ~X32_SYSCALL_BIT & 0xFFFFFFFF))
    body += [
        _op(_JEQ_K, arch.clone3, 0, 1),
        _op(_RET_K, _ERRNO | errno.ENOSYS),
        _op(_JEQ_K, arch.clone, 1, 0),
        _op(_JEQ_K, arch.unshare, 0, 3),
        _op(_LD_W_ABS, _OFF_ARG0),
        _op(_JSET_K, CLONE_NEWUSER, 0, 1),
        _op(_RET_K, deny),
        _op(_RET_K, _ALLOW),
    ]
    return body


def program(machine: str | None = None) -> bytes | None:
    """The filter for `machine` (default: this one) as bwrap reads it, or None without a table."""
    archs = TABLES.get(machine or platform.machine())
    if archs is None:
        return None
    out: list[bytes] = []
    for arch in archs:
        block = _arch_block(arch)
        out.append(_op(_LD_W_ABS, _OFF_ARCH))
        out.append(_op(_JEQ_K, arch.audit, 0, len(block)))  # not this ABI: skip its block
        out += block
    out.append(_op(_RET_K, _ERRNO | errno.ENOSYS))  # an ABI without a table: refuse, do not guess
    return b"".join(out)


@functools.cache
def filter_file() -> Path | None:
    """The filter written once per harness process to a private file, or None (no table)."""
    code = program()
    if code is None:
        return None
    from harness.artifacts.lock import host_tmp

    # In /dev/shm or the machine's temp dir, not tempfile's: a runs tree's scratch (lock.hold) goes with its run.
    folder = host_tmp("seccomp", memory=True)
    atexit.register(shutil.rmtree, folder, True)
    path = folder / "userns.bpf"
    path.write_bytes(code)
    return path
