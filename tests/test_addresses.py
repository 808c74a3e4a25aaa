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
PUBLIC_TLD = (
    "com|org|net|io|sh|dev|ai|app|cloud|co|gg|me|us|uk|de|edu|gov|mil|int|info|biz|xyz|fr|nl|eu|ch"
    "|se|no|fi|dk|it|es|pl|cz|at|be|ru|cn|jp|kr|in|br|au|ca|nz|tv|ly|to|so|page|site|online|tech|run"
)
"""Top-level domains a public host name ends with (the common ones: the list need not be complete
for names after a network command, where any of them is an address off the machine)."""
_PUBLIC_HOST = rf"((?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+(?:{PUBLIC_TLD}))(?![\w-])"
HOST_WITH_PATH = re.compile(rf"(?<![\w.@/-]){_PUBLIC_HOST}(?=/\w|:\d)", re.I)
"""A public-looking host name followed by a path or a port (an image reference, a bare URL)."""
HOST_AFTER_COMMAND = re.compile(
    r"\b(?:ping6?|curl|wget|nc|ncat|netcat|socat|telnet|ssh|scp|sftp|rsync|dig|nslookup|whois"
    r"|traceroute|tracepath|mtr|ftp|s_client)\s([^;|&\n]*)",
    re.I,
)
"""A network command and the rest of its shell command: every public host name in it counts."""
HOST_AND_PORT = re.compile(rf"""[(\[]\s*["']{_PUBLIC_HOST}["']\s*,\s*\d{{1,5}}\s*[)\]]""", re.I)
"""A public host name and a port as a pair, `("name", 443)`: an address to connect to."""
USER_AT_HOST = re.compile(rf"(?<![\w.])[\w.-]+@{_PUBLIC_HOST}:(?!\d)", re.I)
"""`user@host:path`, the form of ssh and git remotes."""
IPV4 = re.compile(r"(?<![\w.])(\d{1,3}(?:\.\d{1,3}){3})(?![\w.])")
IPV6 = re.compile(r"(?<![\w:.])([0-9a-f]{0,4}(?::[0-9a-f]{0,4}){2,7})(?![\w:.])", re.I)
"""An IPv6 address outside a URL (taken with three groups or more: `x[1::2]` is a slice)."""
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
    hosts = [m.group(1) for m in HOST_WITH_PATH.finditer(line)]
    for m in HOST_AFTER_COMMAND.finditer(line):
        hosts += [h.group(1) for h in re.finditer(rf"(?<![\w.@/-]){_PUBLIC_HOST}", m.group(1), re.I)]
    hosts += [m.group(1) for m in (*HOST_AND_PORT.finditer(line), *USER_AT_HOST.finditer(line))]
    found += [host for host in hosts if not _on_this_machine(host)]
    v6 = [m for m in IPV6.finditer(line) if sum(1 for g in m.group(1).split(":") if g) >= 3]
    for m in (*IPV4.finditer(line), *v6):
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
    # Names and addresses without a scheme, a path or a port: after a network command, as a
    # (host, port) pair, as an ssh remote, and IPv6 anywhere.
    bare, other, remote, v6 = (
        ".".join(("one", "example-dns", "net")),
        ".".join(("mirror", "pkgs", "org")),
        ".".join(("code", "host", "com")),
        ":".join(("2606", "4700", "", "1111")),
    )
    off = f"ping -c 1 {bare} && nc -z {other} 443; create_connection(('{bare}', 53)); git clone git@{remote}:o/r"
    assert offending(off) == [bare, other, remote]
    assert offending(f"dig @{v6} x; ping6 {v6}") == [v6]
    fine = (
        "http://127.0.0.1:9 http://[::1]:8 https://x.invalid/w tcp://scheduler.example:8786 "
        "10.213.4.2 http://host/path self.net.com() '$schema': 'https://json-schema.org/draft/2020-12/schema' "
        "runs[1::2] E240:: fe80::1:2 curl -o d.csv x ping -c 1 10.213.4.2 ('127.0.0.1', 9) nc h.test 80 "
        "(('a.txt', 1000), ('b.py', 3))"
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
