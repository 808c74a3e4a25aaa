"""run.json's account of the sandbox: which protections held, and what the agent's trees held.

`Protections` is measured once per isolation and harness process by a probe sandbox
(`harness.sandbox.protections`). `harness.sandbox.neutralise` produces a `TreeReport` for
each agent-written tree (workspace, home, state, the run directory's outbox) before any
host-side code reads it. Paths are relative to the tree and printable (`printable`): a name
the agent chose may hold newlines, escape sequences or bytes that are not UTF-8, and none of
that may reach a terminal or make a record unreadable.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

OddKind = Literal["fifo", "socket", "char_device", "block_device", "unknown"]
"""File types the harness never opens (reading a FIFO blocks, a device has side effects)."""

LISTED = 50
"""At most this many paths are listed per kind of finding; the counts are always complete."""


class Protections(BaseModel):
    """What held for the sandbox the run used (False: it did not, and `failed` says why)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    isolation: str = Field(default="none", description="The isolation plug-in measured.")
    sandbox_uid: int | None = Field(
        default=None, description="Host uid that owned a file the sandbox created (None: not measured)."
    )
    uid_unprivileged: bool = Field(default=False, description="The sandbox's host uid is not 0.")
    nosuid_nodev: bool = Field(
        default=False, description="The sandbox's writable mounts are nosuid and nodev (seen from inside)."
    )
    capabilities_dropped: bool = Field(
        default=False, description="No effective capability, no_new_privs set (seen from inside)."
    )
    userns_blocked: bool = Field(default=False, description="Creating a user namespace inside fails.")
    setuid_stripped: bool = Field(
        default=False,
        description="Every agent-writable tree was neutralised after each command (harness.sandbox.neutralise).",
    )
    disk_limited: bool = Field(
        default=False,
        description="The agent's writable folders were on filesystems of their size limits, kept by the "
        "kernel (harness.sandbox.disk); False: watched (polled) or off.",
    )
    failed: tuple[str, ...] = Field(default=(), description="One sentence per protection that did not hold.")


class OddFile(BaseModel):
    """A file that is neither a regular file, a folder nor a symlink."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str = Field(
        description="Relative to the tree, printable (control characters and bad bytes escaped)."
    )
    kind: OddKind = Field(description="fifo, socket, char_device, block_device, or unknown.")


class TreeReport(BaseModel):
    """One walk over an agent-written tree: what it held and what was made safe."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    entries: int = Field(
        default=0, description="Entries walked (files, folders, links, odd files; the root excluded)."
    )
    stripped: int = Field(
        default=0,
        description="Entries (the root included) whose setuid, setgid, sticky or world-write bits were removed.",
    )
    stripped_paths: tuple[str, ...] = Field(
        default=(), description=f"The first {LISTED} of them, printable ('.' is the root)."
    )
    odd_count: int = Field(default=0, description="FIFOs, sockets, devices and unknown types found.")
    odd: tuple[OddFile, ...] = Field(default=(), description=f"The first {LISTED} of them.")
    deepest: int = Field(default=0, description="Deepest nesting seen (1 = directly in the root).")


_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\\": "\\\\"}


def printable(rel: bytes, *, limit: int = 300) -> str:
    """A relative path the agent chose, safe to show and to store: bytes that are not UTF-8 and
    control characters are escaped (`\\n`, `\\x1b`), a backslash is doubled, and a path longer
    than `limit` characters is cut with its full byte length noted."""
    out: list[str] = []
    for char in rel.decode("utf-8", errors="surrogateescape"):
        code = ord(char)
        if char in _NAMED:
            out.append(_NAMED[char])
        elif 0xDC80 <= code <= 0xDCFF:  # a byte that is not UTF-8, kept by surrogateescape
            out.append(f"\\x{code - 0xDC00:02x}")
        elif code < 0x20 or code == 0x7F or 0x80 <= code < 0xA0:
            out.append(f"\\x{code:02x}")
        else:
            out.append(char)
    shown = "".join(out)
    if len(shown) > limit:
        return f"{shown[:limit]}…({len(rel)} bytes)"
    return shown
