"""git's patch format for a created or a deleted file, byte for byte what `git diff --binary` writes.

A workspace an agent filled with 60,000 new files would cost one `git diff` reading all of
them from scratch trees built for it; a created file's patch, though, is just its content
behind a fixed header, and a deleted file's the same in reverse. These functions write them
as git does (tests compare them with git's own output): names quoted as git quotes them
(`core.quotePath`), `\\ No newline at end of file`, binary content (a NUL in the first 8,000
bytes) as a `GIT binary patch` literal with the full blob ids `git apply` checks. Changes
with both sides (modifications, a file turned symlink) are left to git itself.
"""

from __future__ import annotations

import base64
import hashlib
import re
import zlib

NO_NEWLINE = b"\\ No newline at end of file\n"
FIRST_FEW_BYTES = 8000
"""git looks this far for a NUL to call a file binary."""
ZERO = "0" * 40
_NEEDS_QUOTE = re.compile(rb'[\x00-\x1f"\\\x7f-\xff]')
_ESCAPES = {7: b"a", 8: b"b", 9: b"t", 10: b"n", 11: b"v", 12: b"f", 13: b"r", 0x22: b'"', 0x5C: b"\\"}


def quote(name: bytes) -> bytes:
    """A path as git writes it in a patch: bare, or C-quoted when any byte needs it."""
    if not _NEEDS_QUOTE.search(name):
        return name
    out = bytearray(b'"')
    for c in name:
        if c in _ESCAPES:
            out += b"\\" + _ESCAPES[c]
        elif c < 0x20 or c >= 0x7F:
            out += b"\\%03o" % c
        else:
            out.append(c)
    return bytes(out + b'"')


def blob_id(data: bytes) -> str:
    """The git object id of a blob holding `data`."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def is_binary(data: bytes) -> bool:
    """git's test: a NUL byte among the first 8,000."""
    return b"\0" in data[:FIRST_FEW_BYTES]


def _literal(data: bytes) -> bytes:
    packed = zlib.compress(data, 1)  # git deflates binary patches at its default level 1
    lines = [b"literal %d\n" % len(data)]
    for start in range(0, len(packed), 52):
        chunk = packed[start : start + 52]
        size = len(chunk)
        lines.append(bytes([ord("A") + size - 1 if size <= 26 else ord("a") + size - 27]))
        lines.append(base64.b85encode(chunk, pad=True) + b"\n")
    return b"".join(lines) + b"\n"


def _hunk(data: bytes, sign: bytes) -> bytes:
    lines = data.split(b"\n")
    last_newline = lines[-1] == b""
    if last_newline:
        lines.pop()
    count = b"" if len(lines) == 1 else b",%d" % len(lines)
    header = b"@@ -0,0 +1%s @@\n" % count if sign == b"+" else b"@@ -1%s +0,0 @@\n" % count
    body = b"".join(sign + line + b"\n" for line in lines)
    return header + body + (b"" if last_newline else NO_NEWLINE)


def one_sided(rel: bytes, data: bytes, mode: str, *, created: bool) -> bytes:
    """The patch that creates (or deletes) `rel` holding `data`, file mode `mode` (100644,
    100755 or 120000 for a symlink, whose data is its target)."""
    a, b = quote(b"a/" + rel), quote(b"b/" + rel)
    out = [
        b"diff --git %s %s\n" % (a, b),
        b"%s file mode %s\n" % (b"new" if created else b"deleted", mode.encode()),
    ]
    oid = blob_id(data)
    binary = is_binary(data)
    ids = (ZERO, oid) if created else (oid, ZERO)
    if not binary:
        ids = (ids[0][:7], ids[1][:7])
    out.append(b"index %s..%s\n" % (ids[0].encode(), ids[1].encode()))
    if not data:
        return b"".join(out)
    if binary:
        empty = _literal(b"")
        out += [b"GIT binary patch\n", *((_literal(data), empty) if created else (empty, _literal(data)))]
        return b"".join(out)
    out.append(b"--- /dev/null\n+++ %s\n" % b if created else b"--- %s\n+++ /dev/null\n" % a)
    out.append(_hunk(data, b"+" if created else b"-"))
    return b"".join(out)


def file_mode(st_mode: int, *, symlink: bool) -> str:
    """git's mode of a file: 120000 (symlink), 100755 (the owner may execute it) or 100644."""
    if symlink:
        return "120000"
    return "100755" if st_mode & 0o100 else "100644"
