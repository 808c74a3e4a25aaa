"""No address off this machine in anything the repository ships (specs, docs, tests, code).

A canary or a test must never be able to send traffic off the machine, and a doc or an example
must not teach it: "network off" is proven against listeners the harness and the tests open on
this machine. Names under the reserved top-level domains (`.invalid`, `.test`, `.example`,
`.localhost`) never resolve, so they are fine as placeholders; loopback and private addresses
are on this machine or the tests' own network namespaces.
"""

from __future__ import annotations

import ipaddress
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

URL_HOST = re.compile(
    r"\b[a-z][a-z0-9+.-]*://(?:[^/\s@'\"`<>()\[\]]*@)?(\[[0-9a-f:.]+\]|[^/\s:'\"`<>()\[\],;|]+)", re.I
)
"""The host of a URL (after an optional user-info part)."""
HOST_WITH_PATH = re.compile(
    r"(?<![\w.@/-])((?:[a-z0-9-]+\.)+(?:com|org|net|io|sh|dev|ai|app|cloud|co|gg|me|us|uk|de))(?=/\w|:\d)",
    re.I,
)
"""A public-looking host name followed by a path or a port (an image reference, a bare URL)."""
IPV4 = re.compile(r"(?<![\w.])(\d{1,3}(?:\.\d{1,3}){3})(?![\w.])")
BANNED = re.compile(r"\bexample\.(?:com|org|net)\b", re.I)
"""Reserved for documentation, but these resolve to real servers."""
RESERVED = (".invalid", ".test", ".example", ".localhost")
SCHEMA_DIALECT = "json-schema.org"
"""`$schema: https://json-schema.org/draft/2020-12/schema` names the JSON Schema dialect; it is an
identifier that validators know by heart and never fetch."""


def _on_this_machine(host: str) -> bool:
    host = host.strip("[]").rstrip(".").lower()
    if not host or ("." not in host and ":" not in host):
        return True  # a placeholder (`host`, `h`) or a name on this machine (`localhost`)
    if any(c in host for c in "{}$<>…*%"):
        return True  # a template
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host.endswith(RESERVED) or host in ("localhost",)
    return not address.is_global


def offending(line: str) -> list[str]:
    """The addresses off this machine that a line names."""
    found = [m.group(0) for m in BANNED.finditer(line)]
    for m in URL_HOST.finditer(line):
        host = m.group(1)
        if host.lower() == SCHEMA_DIALECT and "/draft/" in line[m.end() :][:20]:
            continue
        if not _on_this_machine(host):
            found.append(host)
    found += [m.group(1) for m in HOST_WITH_PATH.finditer(line) if not _on_this_machine(m.group(1))]
    for m in IPV4.finditer(line):
        try:
            address = ipaddress.ip_address(m.group(1))
        except ValueError:
            continue
        if address.is_global:
            found.append(m.group(1))
    return list(dict.fromkeys(found))


def test_the_patterns_catch_what_they_must() -> None:
    # Assembled here, so that this file names none of them itself.
    banned, url_host, image_host, ip = (
        ".".join(("example", "com")),
        ".".join(("a", "b", "co")),
        ".".join(("r", "io")),
        ".".join("9" * 4),
    )
    off = f"curl https://{url_host}/uv | sh; ping {ip}; FROM {image_host}/x/y:1; see {banned}:80"
    assert offending(off) == [banned, url_host, image_host, ip]
    fine = (
        "http://127.0.0.1:9 http://[::1]:8 https://x.invalid/w tcp://scheduler.example:8786 "
        "10.213.4.2 http://host/path self.net.com() '$schema': 'https://json-schema.org/draft/2020-12/schema'"
    )
    assert offending(fine) == []


def test_no_address_off_this_machine_in_the_repository() -> None:
    git = shutil.which("git")
    if git is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the shipped files are the tracked ones")
    listed = subprocess.run([git, "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    problems: list[str] = []
    for name in listed.decode().split("\0"):
        path = ROOT / name
        if not name or not path.is_file() or path.is_symlink():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue  # binary
        for number, line in enumerate(text.splitlines(), 1):
            problems += [f"{name}:{number}: {hit}" for hit in offending(line)]
    assert problems == []
