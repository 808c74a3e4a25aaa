"""From a job's agent to the adapter command line and its resolved arguments.

`agent.adapter` is a built-in short name (`adapters.<name>` run with the harness's Python),
`command` (agent.command through `sh -c`, seed 000's --agent-cmd), or a dotted module path
run with `python -m`. Arguments that name project files are resolved here, outside the
sandbox, because the agent cannot read the project: the scripted agent's script (its
scenario's own `scenario_script`, else the project's `script`) is inlined as `script_inline`; the oracle gets the scenario's reference overlay copied into the
run directory as `reference_dir`.
"""

from __future__ import annotations

import compileall
import contextlib
import functools
import re
import shlex
import site
import sys
from pathlib import Path
from typing import Any

import adapters
from compiler.contract import Job
from harness.artifacts.store import read_plain
from harness.errors import UsageError
from harness.plugins import Plugins
from harness.trial.workspace import copy_tree

CODE_ROOT = Path(adapters.__file__).resolve().parent.parent
"""The folder holding the adapters package, put on the adapter's sys.path (not its env)."""

ADAPTERS = Plugins(
    "adapter", {name: f"adapters.{name}" for name in adapters.__all__}, also=("command",), dotted="pkg.mod"
)
"""Built-in adapters by short name -> the module run as `python -m` (the compiler checks the
same names, `compiler.load.builtin_adapters`)."""

REFERENCE_DIR = ".assay/reference"
"""Run-dir-relative copy of the scenario's reference, for the oracle only."""
REFERENCE_MOUNTS_DIR = ".assay/reference-mounts"
"""Run-dir-relative copies of the writable mounts' reference overlays (`mount_reference_dirs`:
mount path -> copy), for the oracle only."""

_RUN_MODULE = (
    "import sys; sys.path[0:0] = [sys.argv.pop(1)]; sys.path += sys.argv.pop(1).split(':'); "
    "import runpy; runpy.run_module(sys.argv[1], run_name='__main__', alter_sys=True)"
)
"""Runs an adapter module as __main__ with the code root first on sys.path and the harness's
site-packages last. Started with `-S`: `site` (which imports the editable install's path hooks,
half of a cold start) is not needed, the code root already being on the path."""


@functools.cache
def _compiled() -> None:
    """Byte-compile the adapters package, once per process, where the harness may write it: the
    sandbox cannot, and with PYTHONDONTWRITEBYTECODE set (or a fresh checkout) every adapter start
    compiled its modules from source again."""
    with contextlib.suppress(OSError):
        compileall.compile_dir(CODE_ROOT / "adapters", maxlevels=0, quiet=2)


def _python_module(module: str) -> list[str]:
    _compiled()
    sites = ":".join(p for p in site.getsitepackages() if Path(p).is_dir())
    return [sys.executable, "-S", "-c", _RUN_MODULE, str(CODE_ROOT), sites, module]


NOOP = ("dd", "of=/dev/null", "status=none")
"""The noop adapter (`adapters/noop.py`: read the prompt, change nothing, write nothing) without an
interpreter: it is every matrix's negative control, and a Python start was most of its cost. One
program, no shell: every program started costs about a millisecond of CPU here (the loader's
CPU-feature probing traps to the hypervisor)."""


def command(job: Job) -> list[str]:
    """The argv that runs the job's adapter."""
    agent = job.agent
    if agent.adapter == "command":
        if not agent.command:
            raise UsageError(f"agent {agent.id!r}: adapter 'command' needs a command")
        return ["sh", "-c", agent.command]
    if agent.adapter == "noop":
        return list(NOOP)
    try:
        module = ADAPTERS.target(agent.adapter)
    except UsageError as exc:
        raise UsageError(f"agent {agent.id!r}: {exc}") from None
    return _python_module(module)


def host_files(job: Job) -> list[Path]:
    """Host files the adapter's command names (seed 000's adapter by host path), to be mounted
    read-only at their own paths; AdapterCannotStart when one is missing here."""
    missing = [p for p in job.agent.host_files if not Path(p).exists()]
    if missing:
        raise AdapterCannotStart(
            f"agent {job.agent.id!r}: its command names {', '.join(missing)}, missing on this machine"
        )
    return [Path(p) for p in sorted(job.agent.host_files)]


class AdapterCannotStart(RuntimeError):
    """A harness-side reason the adapter cannot start (a missing file, a sandbox that does not
    start, a program the shell cannot find): the run failed to run, it is not the agent's failure."""


def launch_check(job: Job, argv: list[str], *, agent_ran: bool = False) -> str:
    """Shell code that exits 0 when the adapter can start in the sandbox: the files its command
    names are readable (else exit 126), its program is found (127), is a file with the execute bit
    (126) and, for a script, names an interpreter that is there (127).

    It runs in the phase before the gate of each of the adapter's launches (`harness.sandbox.gate`),
    in a subshell of the phase's shell, or alone (`launch_probe`): the harness's own evidence that
    the adapter could not start, which nothing the agent prints can forge (the agent does not exist
    yet). With `agent_ran` (a later session, a retry) the agent has had its turn in the folders it
    writes: a program, script or interpreter the sandbox's user could have changed (it owns it, or
    may write its folder) — or, for a program not found, a PATH with such a folder — is passed, so a
    launch that then fails is the agent's own exit, never a reason to drop the run."""
    program, script = argv[0], False
    if job.agent.adapter == "command" and job.agent.command:
        found = _program(job.agent.command)
        program, script = found or "sh", found is not None  # a compound command: only its files are checked
    files = " ".join(shlex.quote(f) for f in sorted(job.agent.host_files))
    name = shlex.quote(program)
    lines = [_MINE if agent_ran else "mine() { return 1; }; path_mine() { return 1; }"]
    if files:
        lines.append(
            f'for f in {files}; do [ -r "$f" ] || mine "$f" || {{ echo "assay: $f is not readable in the sandbox" >&2; exit 126; }}; done'
        )
    missing = f'echo "assay: "{name}" is not found in the sandbox" >&2; exit 127'
    if "/" in program:  # by its path: no lookup (and no subshell: this runs before every launch)
        lines.append(f'p={name}; [ -e "$p" ] || {{ mine "$p" && exit 0; {missing}; }}')
        lines.append(
            'mine "$p" && exit 0; [ -f "$p" ] && [ -x "$p" ] || '
            '{ echo "assay: $p: Permission denied (not an executable file in the sandbox)" >&2; exit 126; }'
        )
    elif job.agent.adapter == "command":  # its path, for the script check (lookups find executables only)
        lines.append(f"p=$(command -v {name} 2>/dev/null) || {{ path_mine && exit 0; {missing}; }}")
    else:  # a built-in's program (dd): found by the shell's lookup, which finds only executables
        lines.append(f"command -v {name} >/dev/null 2>&1 || {{ path_mine && exit 0; {missing}; }}")
    if script:  # the built-ins run the harness's interpreter or dd, a compound command the shell: no scripts
        lines.append(_SHEBANG)
    return "\n".join(lines)


_MINE = (
    'mine() { [ -O "$1" ] || [ -w "${1%/*}/." ]; }; '
    'path_mine() { ( IFS=:; for d in $PATH; do [ -w "${d:-.}/." ] && exit 0; done; exit 1 ); }'
)
"""Whether the sandbox's user could have changed a path (owns it, may write its folder), or a PATH
folder: what the agent may have done to its own adapter before a later launch."""

_SHEBANG = (
    'case $p in */*) l=$(head -c 256 -- "$p" 2>/dev/null); nl="\n"; l=${l%%"$nl"*}; '
    'case $l in "#!"*) i=${l#??}; i=${i#"${i%%[! ]*}"}; i=${i%%[ ]*}; '
    '[ -n "$i" ] && { [ -x "$i" ] || mine "$i" || { echo "assay: $p names the interpreter $i, which is not in the sandbox" >&2; exit 127; }; };; '
    "esac;; esac"
)
"""A script's `#!` interpreter must be there (the kernel's exec fails "not found" otherwise). Its
first bytes are read by `head` (a shell's `read` goes a byte at a time: 24 s for a 50 MB file with
no newline)."""


def launch_probe(job: Job, argv: list[str]) -> list[str]:
    """A command that checks, inside the sandbox, that the adapter can start (`launch_check`)."""
    return ["/bin/sh", "-c", launch_check(job, argv)]


PROBE_MARK = "@@assay-launch-probe"
"""Printed (with the check's exit status) by a phase whose launch check failed."""


def probe_phase(job: Job, argv: list[str], *, agent_ran: bool = False) -> str:
    """The launch check as (the end of) a gated launch's phase: when it fails, the phase prints
    PROBE_MARK and its status and ends the launch (exit 125) before the gate, so the adapter never
    starts (`probe_failure` reads it)."""
    check = launch_check(job, argv, agent_ran=agent_ran)
    return (
        f"printf '\\n{PROBE_MARK}-begin\\n'; ( {check}\n) 2>&1 || "
        f"{{ printf '\\n{PROBE_MARK} %d\\n' $?; exit 125; }}\n"
    )


def probe_failure(output: bytes) -> tuple[str, bytes] | None:
    """(why, what the check printed) when a phase's launch check failed (`probe_phase`), else None."""
    head, mark, tail = output.rpartition(f"\n{PROBE_MARK} ".encode())
    if not mark:
        return None
    head = head.rpartition(f"\n{PROBE_MARK}-begin\n".encode())[2]  # the check's own, not the canaries'
    why = head.decode("utf-8", errors="replace").strip()[-500:]
    code = tail.split()[0].decode() if tail.split() else "?"
    return f"the adapter cannot start in the sandbox (exit {code}): {why}", head[-4000:]


SHELL_WORDS = frozenset({"if", "for", "while", "until", "case", "exec", "cd", "export", "set", "source", "."})


def _program(command: str) -> str | None:
    """The program a simple shell command starts (None for a compound one: `(...)`, `if`, `a | b`)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    while words and re.match(r"^\w+=", words[0]):
        words = words[1:]
    if not words or not re.fullmatch(r"[\w./+-]+", words[0]) or words[0] in SHELL_WORDS:
        return None
    return words[0]


def _project_file(project: Path, rel: str) -> Path | None:
    """A file named by an agent argument: project-relative, or relative to specs/agents/
    (where agent specs live, for a compiler that leaves arguments as written)."""
    for base in (project, project / "specs" / "agents"):
        path = (base / rel).resolve()
        if path.is_file() and (path == project or project in path.parents):
            return path
    return None


def _script(job: Job, project: Path, args: dict[str, Any]) -> dict[str, Any]:
    """The scripted agent's script for this job: the scenario's own (`scenario_script`, a path in
    the scenario's folder), else the project file `script`. One without steps for the scenario is
    refused here (the trial fails to run, with this reason), never run as an agent doing nothing;
    the compiler refuses it first (E237)."""
    sid = job.scenario.id
    own = args.get("scenario_script")
    if isinstance(own, str):
        folder = (project / job.scenario.root).resolve()
        path = (folder / own).resolve()
        if path.is_file() and folder in path.parents:
            script = read_plain(path)
            if isinstance(script, dict):
                return script
    central = args.get("script")
    if isinstance(central, str):
        found = _project_file(project, central)
        if found is None:
            raise UsageError(f"agent {job.agent.id!r}: script {central!r} not found under {project}")
        script = read_plain(found)
        by_scenario = script.get("scenarios") if isinstance(script, dict) else None
        if isinstance(script, dict) and (
            "steps" in script
            or (isinstance(by_scenario, dict) and (sid in by_scenario or "default" in by_scenario))
        ):
            return script
    raise UsageError(
        f"agent {job.agent.id!r} has no script steps for scenario {sid!r}"
        + (f" (no {job.scenario.root}/{own})" if isinstance(own, str) else "")
        + "; run `assay new scripts "
        + sid
        + "` or add them to its script"
    )


def resolve_args(job: Job, *, project: Path, run_dir: Path) -> dict[str, Any]:
    """The adapter arguments as the adapter receives them in BENCH_AGENT_ARGS."""
    args: dict[str, Any] = dict(job.agent.args)
    if job.agent.model and "model" not in args:
        args["model"] = job.agent.model
    if "script_inline" not in args and ("script" in args or "scenario_script" in args):
        args["script_inline"] = _script(job, project, args)
    if job.agent.adapter == "oracle":
        if job.scenario.reference is None:
            raise UsageError(f"scenario {job.scenario.id!r} has no reference for the oracle")
        dest = run_dir / REFERENCE_DIR
        copy_tree(project / job.scenario.reference, dest)
        args["reference_dir"] = str(dest)
        overlays: dict[str, str] = {}
        for i, m in enumerate(sorted(job.scenario.mounts, key=lambda m: m.path)):
            if m.reference is not None:
                copy = run_dir / REFERENCE_MOUNTS_DIR / str(i)
                copy_tree(project / m.reference, copy)
                overlays[m.path] = str(copy)
        if overlays:
            args["mount_reference_dirs"] = overlays
    return args


def describe(argv: list[str]) -> str:
    """A short human label of what ran, for run.json."""
    if _RUN_MODULE in argv:
        return f"python -m {argv[-1]}"
    return " ".join(argv)
