"""Host files a command agent names: seed 000's `--agent-cmd "python3 /home/me/adapters/x.py"`.

The agent runs in a sandbox that shows only the toolchain and its own folders, so a script the
command names by its host path would not be there (exit 127, graded as the agent's failure).
The compiler finds those paths — the command's program, and the script an interpreter is given —
and the runner mounts each read-only at the same path. A named file that does not exist is an
error at compile time. Their content goes into the agent's hash: a changed adapter reruns.
"""

from __future__ import annotations

import hashlib
import re
import shlex
from pathlib import Path

TOOLCHAIN = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/dev", "/proc", "/sys")
"""Folders the sandbox shows anyway (a command naming /usr/bin/python3 needs no mount)."""
INTERPRETER = re.compile(r"^(?:.*/)?(?:python[\d.]*|bash|sh|dash|zsh|node|ruby|perl|Rscript|php)$")
DIRECTORY = "directory"
"""The digest recorded for a named folder (its content is not hashed)."""


def _script_after(words: list[str]) -> str | None:
    """The script an interpreter runs (its first non-option argument), if any."""
    for i, word in enumerate(words):
        if word in ("-c", "-m", "-e"):
            return None  # code or a module, not a file
        if word.startswith("-"):
            continue
        return word if i < len(words) else None
    return None


def named_host_files(command: str) -> list[str]:
    """Absolute host paths a command runs: its program, the script an interpreter is given."""
    try:
        words = shlex.split(command)
    except ValueError:
        return []
    while words and re.match(r"^\w+=", words[0]):  # VAR=value prefixes
        words = words[1:]
    if words[:1] in (["exec"], ["env"]):
        words = words[1:]
    found: list[str] = []
    if words:
        found.append(words[0])
        if INTERPRETER.match(words[0]):
            script = _script_after(words[1:])
            if script:
                found.append(script)
    return [
        p
        for p in dict.fromkeys(found)
        if p.startswith("/") and not any(p == t or p.startswith(t + "/") for t in TOOLCHAIN)
    ]


def digest(path: str) -> str | None:
    """sha256 of a host file, `directory` for a folder, None when it does not exist."""
    target = Path(path)
    try:
        if target.is_dir():
            return DIRECTORY
        return hashlib.sha256(target.read_bytes()).hexdigest()
    except OSError:
        return None
