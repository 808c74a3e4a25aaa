"""Several commands in one sandbox launch, each reported on its own.

Starting a sandbox, an interpreter and pytest costs more than most checks take to run. A batch
starts one sandbox (the same `wrap` each command would get) running `batch_server.py`, which
runs the commands in turn and reports each one's exit status, stdout, stderr, timing and
whether it timed out, with each command's own timeout and output cap enforced. Before each
command every process the previous one left is killed and the writable folders (`roots`) are
reset to the state the batch began with, so one command's files, processes and temp files never
reach the next (nor the caller's reading of the workspace afterwards). Python commands that run
this interpreter are forked from a server that has `preload` imported (pytest) instead of
starting cold; the trial pipeline can use the same server for Python adapters.

The batch is an optimisation, never an authority: a command the batch did not report on (the
server refused — no pid namespace of its own, a workspace too big to hold — or died, or the
launch ran out of time) comes back as None, and the caller runs it on its own as before. A server
can also be kept across runs (`harness.sandbox.batch_warm`): the same program, the same frames.
"""

from __future__ import annotations

import base64
import binascii
import compileall
import contextlib
import functools
import json
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from harness.sandbox import proc

STARTUP_S = 60.0
"""Time the launch may take on top of the commands' own timeouts (sandbox, interpreter, preload)."""
SANDBOX_ROOTS = ("/tmp", "/dev/shm", "/var/tmp")
"""Writable folders of a sandbox's own (bwrap, unshare) that are reset between commands."""


class Command(NamedTuple):
    """One command of a batch, as it would run on its own (before any sandbox wrapper)."""

    argv: tuple[str, ...]
    env: Mapping[str, str]
    timeout_s: float


class Outcome(NamedTuple):
    """What one command of a batch left."""

    exit_code: int | None
    """Exit status (128+N for a signal inside a sandbox, -N outside); None when it was ended."""
    stdout: bytes
    stderr: bytes
    timed_out: bool
    capped: bool
    """Its stdout passed the output cap (it was ended)."""
    duration_s: float
    forked: bool
    """It ran in an interpreter forked from the server (not exec'd)."""


class Launch(NamedTuple):
    """How the batch's sandbox starts: the wrapper every command would get, and what it confines."""

    wrap: Callable[[Sequence[str]], Sequence[str]] | None
    sandboxed: bool
    """`wrap` is a sandbox with its own pid, mount and network namespaces and private temp folders."""
    home: Path | None = None
    """HOME the wrapper gives every command (it overrides the command's environment)."""


@functools.cache
def server_source() -> str:
    """The server's code, passed to `python -c` (the sandbox need not see assay's sources): the
    protocol (`batch_server.py`), the resets (`batch_reset.py`), the forked interpreters
    (`batch_python.py`), then the call of its main."""
    here = Path(__file__).parent
    names = ("batch_server.py", "batch_reset.py", "batch_python.py")
    parts = [(here / name).read_text(encoding="utf-8") for name in names]
    return "\n".join([*parts, "main()\n"])


def frame(doc: Mapping[str, object]) -> bytes:
    """One document as the server reads it on stdin: ten digits of length, then the JSON."""
    data = json.dumps(doc).encode()
    return b"%010d" % len(data) + data


def _host_ns(kind: str) -> str:
    try:
        return os.readlink(f"/proc/self/ns/{kind}")
    except OSError:
        return ""


def compile_preload(preload: Sequence[str]) -> None:
    """Byte-compile what a server preloads (the distributions named, and those they require), once
    per process, where the harness may write: inside the sandbox those folders are read-only, and
    an environment installed without bytecode (uv's default) made every server compile pytest from
    source again (a third of a grade's CPU)."""
    _compiled(tuple(sorted(preload)))


@functools.cache
def _compiled(names: tuple[str, ...]) -> None:
    from importlib import metadata

    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name.lower() in seen:
            continue
        seen.add(name.lower())
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        for file in dist.files or ():
            if file.suffix == ".py":
                with contextlib.suppress(OSError, ValueError):  # compiled already: only its header is read
                    compileall.compile_file(str(dist.locate_file(file)), quiet=2)
        for requirement in dist.requires or ():
            if "extra ==" not in requirement:  # what an import of it loads, not its optional extras
                todo.append(re.split(r"[\s;<>=!~\[(]", requirement, maxsplit=1)[0])


def server_config(launch: Launch, preload: Sequence[str], *, warm: bool) -> dict[str, object]:
    """The server's first frame: what it preloads, the folders it resets, how it reports signals.

    A warm server leaves the workspace (".") out of its own folders: each run captures it anew."""
    roots = [] if warm else ["."]
    if launch.sandboxed:
        roots += [*([str(launch.home)] if launch.home is not None else []), *SANDBOX_ROOTS]
    return {
        "preload": list(preload),
        "roots": roots,
        "home": str(launch.home) if launch.home is not None else None,
        "host_pidns": _host_ns("pid"),
        "host_ipcns": _host_ns("ipc"),
        "ipc": launch.sandboxed,  # bwrap and unshare give the sandbox an IPC namespace of its own
        "signal_base": 128 if launch.sandboxed else 0,
        "warm": warm,
    }


def run_request(commands: Sequence[Command], output_cap: int, *, warm: bool) -> dict[str, object]:
    """The frame of one run: its commands (and, to a warm server, the workspace to capture)."""
    checks = [
        {"argv": list(c.argv), "env": dict(c.env), "timeout": c.timeout_s, "cap": output_cap}
        for c in commands
    ]
    return {"checks": checks, "roots": ["."] if warm else []}


def output_cap_of(commands: Sequence[Command], output_cap: int) -> int:
    """Bytes the server may write for a run of `commands` (their outputs, base64, and the rows)."""
    return len(commands) * (3 * output_cap + 4096) + 65536


def run_batch(
    commands: Sequence[Command],
    *,
    cwd: Path,
    launch: Launch,
    preload: Sequence[str] = (),
    output_cap: int,
) -> list[Outcome | None]:
    """Run the commands in turn in one launch; one outcome per command, None where there is none."""
    if not commands:
        return []
    if not launch.sandboxed and (launch.wrap is not None or not proc.pidns_available()):
        # kill(-1) needs a pid namespace of the batch's own; a netns-only wrapper has none
        return [None] * len(commands)
    compile_preload(preload)
    config = server_config(launch, preload, warm=False)
    argv: Sequence[str] = [sys.executable, "-c", server_source()]
    if launch.wrap is not None:
        argv = launch.wrap(argv)
    done = proc.run(
        list(argv),
        cwd=cwd,
        env=dict(commands[0].env),  # the server starts as the first command would
        stdin=frame(config) + frame(run_request(commands, output_cap, warm=False)),
        timeout_s=sum(c.timeout_s for c in commands) + STARTUP_S,
        output_cap=output_cap_of(commands, output_cap),
        capture=True,
        namespaces=not launch.sandboxed,
    )
    return parse(done.output, len(commands))


def parse(output: bytes, count: int) -> list[Outcome | None]:
    """The outcomes the server reported (its stdout); None for each command it did not report."""
    found: list[Outcome | None] = [None] * count
    for line in output.splitlines():
        report(row_of(line), found)
    return found


def row_of(line: bytes) -> dict[str, Any]:
    """One line the server wrote, as a document ({} for anything else: a half-written line)."""
    try:
        row = json.loads(line)
    except ValueError:
        return {}
    return row if isinstance(row, dict) else {}


def report(row: Mapping[str, Any], found: list[Outcome | None]) -> None:
    """Put a command's row (`{"index": n, ...}`) in its place in `found`; any other row is ignored."""
    try:
        n = int(row["index"])
        exit_code = row["exit"]
        outcome = Outcome(
            exit_code=None if exit_code is None else int(exit_code),
            stdout=base64.b64decode(row["stdout"], validate=True),
            stderr=base64.b64decode(row["stderr"], validate=True),
            timed_out=bool(row["timed_out"]),
            capped=bool(row["capped"]),
            duration_s=float(row["duration_s"]),
            forked=bool(row["forked"]),
        )
    except (ValueError, KeyError, TypeError, binascii.Error):
        return  # not a command's row, or one the server did not finish (it was ended while writing)
    if 0 <= n < len(found):
        found[n] = outcome
