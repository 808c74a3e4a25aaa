"""Reading the shell steps of a task (Dockerfile RUN lines, test and solution scripts) without running them.

`split_commands` turns shell text into simple commands (split at `&&`, `||`, `;` and newlines;
a pipe or a redirection stays inside its command, so a caller sees that the step does more than
run one program). `PackageSteps.take` recognises the steps that only install packages — apt-get,
pip in its spellings, uv — and records what they install, which a scenario environment provides
up front instead.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from dataclasses import dataclass, field

SEPARATORS = frozenset({"&&", "||", ";", "\n", "&"})
PIP_VALUE_FLAGS = frozenset(
    {
        "-i",
        "--index-url",
        "--extra-index-url",
        "-r",
        "--requirement",
        "-c",
        "--constraint",
        "-f",
        "--find-links",
    }
)
"""pip options that take a value and change where packages come from: not reproducible offline."""
PIP_FLAGS_WITH_VALUE_OK = frozenset({"--python", "-p", "--target", "-t", "--prefix"})
APT_NOOPS = frozenset({"update", "clean", "autoclean", "autoremove"})
PYTHON = re.compile(r"^python(?:3(?:\.\d+)?)?$")
PIP = re.compile(r"^pip(?:3(?:\.\d+)?)?$")
UV_INSTALLER = re.compile(r"^https?://[^/\s]+/uv/(?:[^/\s]+/)?install\.sh$")
"""The URL of uv's install script (any host: assay names none), which both formats pipe to sh."""
UV_HOUSEKEEPING = frozenset({"init", "venv"})
"""uv subcommands that only make a project or a venv: the scenario environment is both."""


HEREDOC = re.compile(r"<<-?\s*(['\"]?)(\w+)\1")


def logical_lines(text: str) -> list[str]:
    """Lines of a shell text with continuations joined and here-document bodies left out."""
    out: list[str] = []
    end: str | None = None
    for line in re.sub(r"\\\n", " ", text).splitlines():
        if end is not None:
            if line.strip() == end:
                end = None
            continue
        if m := HEREDOC.search(line):
            end = m.group(2)
        out.append(line)
    return out


def split_commands(text: str) -> list[list[str]]:
    """Simple commands of a shell text (a quoted string may span lines); text that cannot be
    tokenised becomes one raw command per line."""
    body = "\n".join(logical_lines(text))
    lexer = shlex.shlex(body, posix=True, punctuation_chars="();<>|&\n")
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:
        return [[line.strip()] for line in body.splitlines() if line.strip()]
    out: list[list[str]] = []
    current: list[str] = []
    for token in tokens:
        if token in SEPARATORS or set(token) == {"\n"}:
            if current:
                out.append(current)
            current = []
        else:
            current.append(token)
    if current:
        out.append(current)
    return out


def uv_installer(cmd: list[str]) -> bool:
    """`curl -LsSf <uv's install script> | sh`: installs uv, which the environment stands in for."""
    return bool(cmd) and cmd[0] == "curl" and any(UV_INSTALLER.search(w) for w in cmd)


def program(command: list[str]) -> str:
    """The program a simple command runs, by name (`/root/.local/bin/uv` -> uv)."""
    return posixpath.basename(command[0]) if command else ""


def strip_prefix(command: list[str]) -> list[str]:
    """The command without leading `VAR=value` assignments and `sudo`."""
    rest = list(command)
    while rest and (re.match(r"^\w+=", rest[0]) or rest[0] == "sudo"):
        rest.pop(0)
    return rest


def _packages(args: list[str]) -> list[str] | None:
    """Package arguments of an install command; None when an option makes it unreproducible."""
    found: list[str] = []
    skip = False
    for i, arg in enumerate(args):
        if skip:
            skip = False
            continue
        flag = arg.split("=", 1)[0]
        if flag in PIP_VALUE_FLAGS:
            return None
        if flag in PIP_FLAGS_WITH_VALUE_OK:
            skip = "=" not in arg and i + 1 < len(args)
            continue
        if arg.startswith("-"):
            continue
        if "://" in arg or arg.startswith(("git+", ".", "/")):
            return None  # a URL, a VCS checkout or a local path: not a registry package
        found.append(arg)
    return found


@dataclass
class PackageSteps:
    """Packages that install steps name."""

    apt: list[str] = field(default_factory=list)
    pip: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def _add(self, target: list[str], names: list[str]) -> None:
        target.extend(n for n in names if n not in target)

    def take(self, command: list[str]) -> bool:
        """Record the command when it only installs packages (or is package-manager housekeeping)."""
        cmd = strip_prefix(command)
        if not cmd or cmd[0] == "set" or (cmd[0] == "export" and all("=" in a for a in cmd[1:])):
            return True  # shell housekeeping of the step itself
        name, args = program(cmd), cmd[1:]
        if name == "uv" and args[:1] and args[0] in UV_HOUSEKEEPING:
            return True
        if name in ("apt-get", "apt"):
            sub = next((a for a in args if not a.startswith("-")), "")
            if sub in APT_NOOPS:
                return True
            if sub != "install":
                return False
            names = [a for a in args if not a.startswith("-") and a != "install"]
            pinned = [n for n in names if "=" in n]
            if pinned:
                self.notes.append(f"Debian version pins dropped: {', '.join(pinned)}")
            self._add(self.apt, [n.split("=", 1)[0] for n in names])
            return True
        if name == "rm" and all(a.startswith(("-", "/var/lib/apt/lists")) for a in args):
            return True
        pip_args: list[str] | None = None
        if PIP.match(name) and args[:1] == ["install"]:
            pip_args = args[1:]
        elif PYTHON.match(name) and args[:3] == ["-m", "pip", "install"]:
            pip_args = args[3:]
        elif name == "uv" and args[:2] == ["pip", "install"]:
            pip_args = args[2:]
        elif name == "uv" and args[:1] == ["add"]:
            pip_args = args[1:]
        if pip_args is None:
            return False
        packages = _packages(pip_args)
        if packages is None:
            return False
        self._add(self.pip, packages)
        return True


def package_name(requirement: str) -> str:
    """The distribution name of a requirement (`numpy==2.1` -> numpy), normalised."""
    name = re.split(r"[<>=!~;\[ @]", requirement.strip(), maxsplit=1)[0]
    return re.sub(r"[-_.]+", "-", name).lower()
