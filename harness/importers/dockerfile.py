"""What a task's Dockerfile builds, in terms a scenario can reproduce, or why it cannot.

Only a known base image (an official Python image, Terminal-Bench's Python and Ubuntu images,
plain Ubuntu or Debian) maps to something this machine provides: an interpreter version. The
instructions that follow are read, not executed: `WORKDIR`, `COPY` (seed files, or a folder at an
absolute path), `ENV`, and `RUN` steps that install packages (`apt-get install`, `pip install`) or
only shape the tree (`mkdir -p`, `chmod`, `rm`). Anything else a `RUN` does (a script that writes
data, a download, a build) cannot be reproduced without running the image, so the task is refused
with that step as the reason: never imported half-built.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from dataclasses import dataclass, field

from harness.importers.shellsteps import PackageSteps, program, split_commands, uv_installer

REGISTRY = r"(?:[^/]*[.:][^/]*/|localhost/)?"
"""An image reference's registry, whichever it is: a first component with a dot or a colon
(Docker's reference grammar). assay names no registry; a mirror of a known image is that image."""
PYTHON_IMAGE = re.compile(rf"^{REGISTRY}(?:library/)?python:(3\.\d+)")
TBENCH_PYTHON = re.compile(rf"^{REGISTRY}laude-institute/t-bench/python-3-(\d+)(?::|$)")
TBENCH_UBUNTU = re.compile(rf"^{REGISTRY}laude-institute/t-bench/ubuntu-24-04(?::|$)")
DISTRO = {
    re.compile(rf"^{REGISTRY}(?:library/)?ubuntu:24\.04"): "3.12",
    re.compile(rf"^{REGISTRY}(?:library/)?ubuntu:22\.04"): "3.10",
    re.compile(rf"^{REGISTRY}(?:library/)?debian:(?:12|bookworm)"): "3.11",
}
"""Distribution images and the python3 their packages give."""

HARNESS_PACKAGES = frozenset({"tmux", "asciinema"})
"""Terminal-Bench's own recording tools, installed for its harness rather than for the task."""
UV_IMAGE = re.compile(rf"^{REGISTRY}astral-sh/uv(?:[:@]|$)")
"""uv's own image, which Dockerfiles copy the uv binary from: the scenario environment stands in for uv."""
INSTALLERS = frozenset({"apt-get", "apt", "pip", "pip3", "uv", "uvx", "conda", "npm", "npx", "gem", "cargo"})
"""Package managers: a RUN that calls one in a way the environment cannot provide is refused."""
DOWNLOADERS = frozenset({"curl", "wget", "git", "scp", "rsync"})
"""Commands that fetch from the network, which a build step here does not have."""


@dataclass(frozen=True)
class Step:
    """A RUN that makes files (a data generator, `echo ... > file`): run in the sandbox at import."""

    workdir: str
    """Where it runs (the WORKDIR at that point; / before any)."""
    script: str
    """The RUN's shell text, as written."""


@dataclass(frozen=True)
class Copy:
    """One COPY/ADD: build-context sources to an absolute destination."""

    sources: tuple[str, ...]
    dest: str
    """Absolute; ends with '/' when it names a folder."""


@dataclass
class Build:
    """The reproducible reading of a Dockerfile."""

    base: str = ""
    python: str | None = None
    """The interpreter version the base image gives (None: unknown)."""
    workdir: str | None = None
    copies: list[Copy] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    packages: PackageSteps = field(default_factory=PackageSteps)
    dirs: list[str] = field(default_factory=list)
    """Absolute folders `mkdir -p` creates."""
    modes: dict[str, int] = field(default_factory=dict)
    """Absolute path -> mode from `chmod`."""
    removed: list[str] = field(default_factory=list)
    """Absolute paths `rm` removes."""
    steps: list[Step] = field(default_factory=list)
    """RUNs that make files, in order; run after the COPYs, offline, with the environment."""
    refusals: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs: comments dropped, continuation lines joined."""
    out: list[tuple[str, str]] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.rstrip()
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if pending and line.lstrip().startswith("#"):
            continue  # a comment inside a continued instruction
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        full = (pending + line).strip()
        pending = ""
        if full:
            word, _, rest = full.partition(" ")
            out.append((word.upper(), rest.strip()))
    if pending.strip():
        word, _, rest = pending.strip().partition(" ")
        out.append((word.upper(), rest.strip()))
    return out


def python_of(image: str) -> tuple[str | None, str | None]:
    """(python version, default workdir) of a known base image; (None, None) when unknown."""
    if m := PYTHON_IMAGE.match(image):
        return m.group(1), None
    if m := TBENCH_PYTHON.match(image):
        return f"3.{m.group(1)}", "/app"
    if TBENCH_UBUNTU.match(image):
        return "3.12", "/app"
    for pattern, version in DISTRO.items():
        if pattern.match(image):
            return version, None
    return None, None


def _expand(value: str, env: dict[str, str]) -> str:
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: env.get(m.group(1) or m.group(2), ""), value)


def _env(args: str, build: Build) -> None:
    try:
        words = shlex.split(args)
    except ValueError:
        build.refusals.append(f"ENV {args!r} cannot be read")
        return
    pairs = (
        [w.split("=", 1) for w in words]
        if all("=" in w for w in words)
        else [[words[0], " ".join(words[1:])]]
    )
    for key, value in pairs:
        if key == "PATH":
            build.notes.append(f"ENV PATH ignored ({value}): the sandbox's PATH is the harness's")
            continue
        build.env[key] = _expand(value, build.env)


def _abs(path: str, workdir: str | None) -> str:
    if path.startswith("/"):
        return posixpath.normpath(path) + ("/" if path.endswith("/") and path != "/" else "")
    base = workdir or "/"
    joined = posixpath.normpath(posixpath.join(base, path))
    return joined + ("/" if path.endswith("/") or path in (".", "./") else "")


def _copy(word: str, args: str, build: Build) -> None:
    try:
        parts = shlex.split(args)
    except ValueError:
        build.refusals.append(f"{word} {args!r} cannot be read")
        return
    flags = [p for p in parts if p.startswith("--")]
    paths = [p for p in parts if not p.startswith("--")]
    source = next((f.split("=", 1)[1] for f in flags if f.startswith("--from=")), None)
    if source is not None and UV_IMAGE.match(source):
        build.notes.append(f"{word} of uv from its image left out: the environment stands in for uv")
        return
    if any(f.startswith("--from") for f in flags):
        build.refusals.append(f"{word} --from another build stage or image ({args})")
        return
    if len(paths) < 2:
        build.refusals.append(f"{word} {args!r} names no destination")
        return
    *sources, dest = paths
    if word == "ADD" and any(
        re.match(r"^\w+://", s) or s.endswith((".tar", ".tgz", ".gz", ".xz", ".zip")) for s in sources
    ):
        build.refusals.append(f"ADD downloads or unpacks ({args}); only plain files can be copied")
        return
    target = _abs(dest, build.workdir)
    if len(sources) > 1 and not target.endswith("/"):
        target += "/"
    build.copies.append(Copy(tuple(sources), target))


def _shapes_tree(command: list[str]) -> bool:
    """`mkdir`, `chmod`, `rm`: commands a scenario's seed reproduces without running them."""
    rest = [a for a in command[1:] if not a.startswith("-")]
    return command[0] in ("mkdir", "rm", "true", ":") or (
        command[0] == "chmod" and len(rest) >= 2 and bool(re.fullmatch(r"[0-7]{3,4}|\+x", rest[0]))
    )


def _shape(command: list[str], build: Build, *, dirs_only: bool) -> None:
    name, rest = command[0], [a for a in command[1:] if not a.startswith("-")]
    if name == "mkdir":
        build.dirs.extend(_abs(p, build.workdir).rstrip("/") for p in rest)
    elif dirs_only:
        return  # the step runs them itself
    elif name == "chmod":
        for path in rest[1:]:
            build.modes[_abs(path, build.workdir).rstrip("/")] = 0o755 if rest[0] == "+x" else int(rest[0], 8)
    elif name == "rm":
        build.removed.extend(
            _abs(p, build.workdir).rstrip("/") for p in rest if not p.startswith("/var/lib/apt")
        )


def _run(args: str, build: Build) -> None:
    """Package installs become the environment, tree shaping the seed; a RUN that does anything
    else becomes a build step, unless it needs the network or a package manager the environment
    cannot stand in for (then the task is refused with that command)."""
    if args.startswith("["):
        build.refusals.append(f"RUN in exec form cannot be read: {args}")
        return
    commands = [c for c in split_commands(args) if c and not uv_installer(c)]
    rest = [c for c in commands if not build.packages.take(c)]
    others = [c for c in rest if not _shapes_tree(c)]
    for command in others:
        name = program(command)
        if name in DOWNLOADERS:
            build.refusals.append(f"RUN step downloads ({shlex.join(command)[:160]}): it needs the network")
        elif name == "uv" and command[1:2] == ["run"]:
            continue  # runs a script with the environment's python (reference.SHIMS)
        elif name in INSTALLERS or command[1:3] == ["-m", "pip"]:
            build.refusals.append(f"RUN step the importer cannot reproduce: {shlex.join(command)}")
    # After a build step, shaping the tree runs as a step too: it may remove what the step used.
    runs = bool(others) or (bool(build.steps) and bool(rest))
    for command in rest:
        if _shapes_tree(command):
            _shape(command, build, dirs_only=runs)
    if runs:
        build.steps.append(Step(build.workdir or "/", args))


def read(text: str) -> Build:
    """Read a Dockerfile; `Build.refusals` says why it cannot be reproduced (empty: it can)."""
    build = Build()
    stages = 0
    for word, args in instructions(text):
        if word == "FROM":
            stages += 1
            image = args.split()[0] if args.split() else ""
            if stages > 1:
                build.refusals.append(f"a multi-stage build (second FROM {image})")
                continue
            build.base = image
            build.python, build.workdir = python_of(image)
            if build.python is None:
                build.refusals.append(f"a custom base image ({image}): nothing here provides it")
        elif word == "WORKDIR":
            build.workdir = (
                _abs(_expand(args.strip().strip('"'), build.env), build.workdir).rstrip("/") or "/"
            )
        elif word in ("COPY", "ADD"):
            _copy(word, args, build)
        elif word == "ENV":
            _env(args, build)
        elif word == "RUN":
            _run(args, build)
        elif word in ("ARG", "LABEL", "USER", "EXPOSE", "SHELL", "STOPSIGNAL", "VOLUME", "HEALTHCHECK"):
            if word == "USER":
                build.notes.append(f"USER {args} ignored: the sandbox runs one unprivileged user")
        elif word in ("CMD",):
            build.notes.append(f"CMD ignored: the agent's adapter is the command ({args})")
        elif word == "ENTRYPOINT":
            build.refusals.append(f"ENTRYPOINT runs something when the container starts ({args})")
        else:
            build.refusals.append(f"Dockerfile instruction {word} is not understood")
    skipped = sorted(set(build.packages.apt) & HARNESS_PACKAGES)
    if skipped:
        build.packages.apt = [p for p in build.packages.apt if p not in HARNESS_PACKAGES]
        build.notes.append(
            f"Debian packages {', '.join(skipped)} left out: Terminal-Bench's own recording tools"
        )
    if build.workdir in (None, "/"):
        build.refusals.append("no WORKDIR: the task's working directory is unknown")
    return build
