"""A task's test script (Terminal-Bench `run-tests.sh`, Harbor `tests/test.sh`) and solution, read.

The test script of both formats installs a test runner from the network and then runs pytest
on the hidden tests. What it installs becomes part of the scenario's environment; the pytest
invocation becomes a `pytest` check (test files, working folder, the arguments that matter).
Boilerplate (installing uv or curl, making a venv, writing Harbor's reward file) is recognised
and left out; any other step — generating data, building code, copying files around — is not
something a check can reproduce, so the task is refused with it as the reason.

A solution is refused when it reaches for the network (downloads, clones, package managers that
resolve online); `pip install` and `uv add` of packages, and `apt-get install` of Debian packages this machine
has, are taken as needs of the environment instead.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

from harness.importers.shellsteps import (
    PackageSteps,
    logical_lines,
    program,
    split_commands,
    strip_prefix,
    uv_installer,
)
from harness.sandbox.scenario_env import deb_installed

TEST_DIR = "/tests"
"""Where both formats put the hidden tests in the container ($TEST_DIR)."""

QUIET_OPTIONS = re.compile(r"^(-r\w*|-v+|-q+|-s|--tb(=.*)?|--color(=.*)?|--no-header|-W.*)$")
"""pytest options that change only its terminal output."""
VALUE_OPTIONS = frozenset({"--ctrf", "--junitxml", "--junit-xml", "--json-report-file", "--tb", "--color"})
BOILERPLATE = frozenset(
    {
        "source",
        ".",
        "echo",
        "exit",
        "if",
        "then",
        "else",
        "elif",
        "fi",
        "set",
        "cat",
        "printf",
        "true",
        ":",
        "exit_code=$?",
    }
)
BACKGROUND = re.compile(r"(?<![&>|])&\s*(?:#.*)?$")
"""A shell line that ends by sending its command to the background (`server &`, not `&&`, `>&`)."""
NETWORK = {
    "curl": "downloads",
    "wget": "downloads",
    "git": "uses git (a clone or fetch)",
    "npm": "installs from npm",
    "conda": "installs with conda",
}


@dataclass
class TestPlan:
    """The hidden test run a task's test script describes."""

    tests: list[str] = field(default_factory=list)
    """Test files or folders, absolute in the sandbox (under /tests)."""
    args: list[str] = field(default_factory=list)
    cwd: str | None = None
    """Absolute working folder of the run (None: the workdir)."""
    env: dict[str, str] = field(default_factory=dict)
    packages: PackageSteps = field(default_factory=PackageSteps)
    setup: list[str] = field(default_factory=list)
    """Shell commands the script runs before pytest (data generation): the check's `setup`."""
    refusals: list[str] = field(default_factory=list)


def _expand(word: str) -> str:
    return re.sub(r"\$\{?TEST_DIR\}?", TEST_DIR, word)


def _pytest_args(command: list[str]) -> list[str] | None:
    """The arguments after `pytest` when the command runs pytest (in any of the usual spellings)."""
    cmd = strip_prefix(command)
    for i, word in enumerate(cmd):
        if i and cmd[i - 1] == "--with":
            continue  # `uvx --with pytest pytest ...`: the first one is a package
        if word == "pytest" or word.endswith("/pytest"):
            return cmd[i + 1 :]
        if word == "-m" and i + 1 < len(cmd) and cmd[i + 1] == "pytest":
            return cmd[i + 2 :]
    return None


def _with_packages(command: list[str], packages: PackageSteps) -> None:
    """`uvx --with pytest==8.4.1 --with X pytest ...` installs what `--with` names."""
    for i, word in enumerate(command):
        if word == "--with" and i + 1 < len(command):
            packages.pip.extend(p for p in [command[i + 1]] if p not in packages.pip)
        elif word.startswith("--with="):
            packages.pip.append(word.split("=", 1)[1])


def _pytest(args: list[str], plan: TestPlan) -> None:
    skip = False
    for word in args:
        if skip:
            skip = False
            continue
        if word in VALUE_OPTIONS:
            skip = True
            continue
        if QUIET_OPTIONS.match(word) or word.split("=", 1)[0] in VALUE_OPTIONS:
            continue
        if word.startswith("-") or not (word.endswith(".py") or "::" in word or "/" in word):
            plan.args.append(word)  # an option, or an option's value (`--timeout 30`)
        else:
            path = _expand(word)
            if not path.startswith("/"):
                path = f"{plan.cwd or '.'}/{path}" if plan.cwd else path
            if path not in plan.tests:
                plan.tests.append(path)


SAFE_WORD = re.compile(r"[\w@%+=:,./${}*?-]+")
"""Words left unquoted: variables expand and globs match as in the test script."""
REDIRECTS = frozenset({"<", ">", ">>"})


def _setup_command(cmd: list[str]) -> str | None:
    """A command a check can run before pytest, as shell text (`uv run python x.py` runs the
    environment's python); None when it pipes, runs in the background or needs the network."""
    if program(cmd) == "uv":
        if cmd[1:2] != ["run"]:
            return None
        rest = cmd[2:]
        while rest and rest[0].startswith("-"):
            rest = rest[1:]
        cmd = ["python3", *(rest[1:] if rest[:1] in (["python"], ["python3"]) else rest)]
    if program(cmd) in NETWORK or any(set(w) <= set("();<>|&") and w not in REDIRECTS for w in cmd):
        return None
    return " ".join(w if w in REDIRECTS or SAFE_WORD.fullmatch(w) else shlex.quote(w) for w in cmd)


def read_tests(text: str) -> TestPlan:
    """The pytest run, its packages and its environment that a test script describes. Steps
    before pytest that are not boilerplate (generating data) become the check's setup."""
    plan = TestPlan()
    depth = 0
    for raw in split_commands(text):
        command = [_expand(w) for w in raw]
        cmd = strip_prefix(command)
        if not cmd:
            continue
        name = cmd[0]
        depth += (name == "if") - (name == "fi")
        pytest_args = _pytest_args(command)
        if pytest_args is None and (
            "/logs/verifier" in " ".join(command) or (re.match(r"^\w+=", command[0]) and len(command) == 1)
        ):
            continue  # Harbor's reward file; a shell variable
        if pytest_args is not None:
            _with_packages(command, plan.packages)
            if name in ("uv", "uvx", "python", "python3", "pytest") or name.startswith("python3."):
                plan.packages.pip.extend(
                    p for p in ["pytest"] if not any(re.match(r"pytest\b", q) for q in plan.packages.pip)
                )
            _pytest(pytest_args, plan)
            continue
        if name == "cd" and len(cmd) == 2:
            plan.cwd = cmd[1] if cmd[1].startswith("/") else None
            continue
        if name == "export" and all("=" in a for a in cmd[1:]):
            for assignment in cmd[1:]:
                key, value = assignment.split("=", 1)
                plan.env[key] = value
            continue
        if uv_installer(cmd):
            continue  # installs uv, which the environment replaces
        if name in BOILERPLATE or (name == "uv" and cmd[1:2] in (["venv"], ["init"])):
            continue
        if name == "rm" and all(
            w.startswith("-") or w in (".venv", "pyproject.toml", "uv.toml", "uv.lock") for w in cmd[1:]
        ):
            continue
        if plan.packages.take(command):
            continue
        setup = None if plan.tests or depth else _setup_command(cmd)
        if setup is not None:
            plan.setup.append(setup)
            continue
        plan.refusals.append(f"a test-script step the checks cannot reproduce: {shlex.join(raw)}")
    if not plan.tests:
        plan.refusals.append("the test script runs no pytest suite (only pytest verifiers are imported)")
    plan.packages.apt = [p for p in plan.packages.apt if p != "curl"]  # it fetched the uv installer
    return plan


@dataclass
class SolutionNeeds:
    """What running a solution needs, read from its text."""

    pip: list[str] = field(default_factory=list)
    apt: list[str] = field(default_factory=list)
    """Debian packages it installs that this machine has (the environment provides them)."""
    background: list[str] = field(default_factory=list)
    """Lines that leave a process running (`cmd &`): a server the tests may talk to."""
    refusals: list[str] = field(default_factory=list)


def read_solution(text: str) -> SolutionNeeds:
    """Packages the solution installs (provided up front) and why it cannot run offline, if it cannot."""
    needs = SolutionNeeds()
    steps = PackageSteps()
    lines = logical_lines(text)
    needs.background = [line.strip() for line in lines if BACKGROUND.search(line)]
    for raw in split_commands("\n".join(lines)):
        cmd = strip_prefix(raw)
        if not cmd:
            continue
        name = cmd[0]
        if uv_installer(cmd) or (name == "uv" and cmd[1:2] == ["init"]):
            continue  # the environment stands in for uv and its project
        if name in NETWORK and (name != "git" or cmd[1:2] in (["clone"], ["fetch"], ["pull"], ["submodule"])):
            needs.refusals.append(
                f"the solution {NETWORK[name]} ({shlex.join(raw)[:120]}): it needs the network"
            )
        elif name == "uv" and cmd[1:2] in (["sync"], ["tool"], ["lock"]):
            needs.refusals.append(
                f"the solution resolves packages with uv ({shlex.join(raw)[:120]}): it needs the network"
            )
        elif name in ("R", "Rscript") and "install.packages" in " ".join(cmd):
            needs.refusals.append("the solution installs R packages: it needs the network")
        elif steps.take(raw):
            continue
        elif any(w in ("pip", "pip3") or w.startswith("pip3.") for w in cmd[:3]) and "install" in cmd:
            needs.refusals.append(
                f"the solution installs packages in a way that needs the network ({shlex.join(raw)[:120]})"
            )
    needs.pip = steps.pip
    missing = [p for p in steps.apt if not deb_installed(p)]
    if missing:
        needs.refusals.append(
            f"the solution installs Debian packages this machine does not have ({', '.join(missing)}):"
            " it needs root and the network"
        )
    needs.apt = [p for p in steps.apt if p not in missing]
    return needs
