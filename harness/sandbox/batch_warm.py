"""Batch servers kept across runs: one sandbox launch and one pytest import per grader, not per run.

A grader that grades run after run in the same scratch folder (`harness.grade.session`) keeps
the batch server of each launch configuration (the folder the commands run in, the sandbox
wrapper, the interpreter-level environment) running between runs, instead of starting a sandbox,
an interpreter and pytest for every run. A run that wants a module preloaded that its server has
not gets a new server preloading both.

The agent under test wrote what the commands run, so a server kept across runs must carry
nothing from one run to the next (`batch_server.py`): it is the sandbox's init, which no process of
the sandbox can signal (`SandboxSpec.init`); it never reads a run itself but forks a child per run
that reads the commands, puts HOME, /tmp, /dev/shm and /var/tmp back as the server found them,
captures the workspace the harness put in the folder, runs the commands (each from that state, as
in any batch), empties the IPC namespace and ends; the server then kills whatever is left. A run
that does not end that way (a command killed its run's process, a reset failed) ends the server:
`run` reports what it has and a new sandbox serves the next run. The harness itself replaces the
folder's contents between runs (`harness.grade.session`).

As with any batch, this changes the cost and never the verdict: `run` gives None where no warm
server can serve (the isolation cannot make it pid 1, a wrapper that is no sandbox of its own),
and None for each command it has no report of; the caller runs those as before.

    with Servers() as servers:
        outcomes = servers.run(commands, cwd=ws, launch=launch, preload=["pytest"], output_cap=cap)
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType

from harness.sandbox import batch
from harness.sandbox.batch import Command, Launch, Outcome
from harness.sandbox.spawn import Spawned, spawn

LIMIT = 8
"""Servers kept at once; past it the one used least recently is ended (a matrix's cells mount
different tools: a server each, which a smaller limit would end and start again run after run)."""
SEND_S = 10.0
"""Time a server may take to read a frame."""
SERVER_ENV = ("PATH", "TZ", "TMPDIR")
SERVER_ENV_PREFIXES = ("PYTHON", "LANG", "LC_")
"""What of the first command's environment the server starts with: what a starting interpreter
reads (the server's `STARTUP`, on which forking depends), the launch's PATH, and what the standard
library caches on import. Nothing run-specific (BENCH_*): the server outlives the run."""

Key = tuple[object, ...]


def server_env(env: Mapping[str, str]) -> dict[str, str]:
    """The environment a warm server starts with, taken from a command's."""
    return {k: v for k, v in env.items() if k in SERVER_ENV or k.startswith(SERVER_ENV_PREFIXES)}


class _Server:
    """One warm server: a sandbox whose init takes one run of commands after another."""

    def __init__(self, process: Spawned, preload: frozenset[str]) -> None:
        self.process = process
        self.preload = preload

    @classmethod
    def start(
        cls,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        config: dict[str, object],
        preload: frozenset[str],
    ) -> _Server | str | None:
        """The server once it is ready; the reason when it refused; None when it did not start."""
        process = spawn(argv, cwd=cwd, env=env, namespaces=False)
        if process.send(batch.frame(config), timeout_s=SEND_S):
            for line in process.lines(timeout_s=batch.STARTUP_S, cap=1 << 20):
                row = batch.row_of(line)
                if "ready" in row:
                    return cls(process, preload)
                if "refused" in row:
                    process.close()
                    return str(row["refused"])
        process.close()
        return None

    def run(self, commands: Sequence[Command], output_cap: int) -> tuple[list[Outcome | None], bool]:
        """One outcome per command (None where there is none) and whether the server may serve again."""
        found: list[Outcome | None] = [None] * len(commands)
        request = batch.frame(batch.run_request(commands, output_cap, warm=True))
        if not self.process.send(request, timeout_s=SEND_S):
            return found, False
        timeout = sum(c.timeout_s for c in commands) + batch.STARTUP_S
        for line in self.process.lines(timeout_s=timeout, cap=batch.output_cap_of(commands, output_cap)):
            row = batch.row_of(line)
            if "idle" in row:  # the run's process ended as it should and nothing of it is left
                return found, True
            if "broken" in row:
                break
            batch.report(row, found)
        return found, False

    def alive(self) -> bool:
        return self.process.alive()

    def close(self) -> None:
        self.process.close()


class Servers:
    """The warm batch servers of one grader, one per launch configuration; used by one thread."""

    def __init__(self, *, limit: int = LIMIT) -> None:
        self.limit = limit
        self._live: OrderedDict[Key, _Server] = OrderedDict()
        self._refused: dict[Key, str] = {}
        self.launches = 0
        """Sandboxes started so far (a figure for tests and benchmarks)."""

    def run(
        self,
        commands: Sequence[Command],
        *,
        cwd: Path,
        launch: Launch,
        preload: Sequence[str] = (),
        output_cap: int,
    ) -> list[Outcome | None] | None:
        """The commands run as `batch.run_batch` runs them, by a warm server; None when none can serve."""
        as_init = getattr(launch.wrap, "as_init", None)
        if not commands or not launch.sandboxed or as_init is None:
            return None
        wrap = as_init()
        env = server_env(commands[0].env)
        identity = getattr(wrap, "identity", None)  # cheaper than building the sandbox's argv
        shown = identity() if callable(identity) else tuple(wrap(["assay-batch-server"]))
        key: Key = (shown, str(cwd), tuple(sorted(env.items())))
        if key in self._refused:
            return None
        wanted = frozenset(preload)
        server = self._live.pop(key, None)
        if server is not None and (not server.alive() or not wanted <= server.preload):
            wanted |= server.preload  # one server per launch: the next preloads what both runs wanted
            server.close()
            server = None
        if server is None:
            batch.compile_preload(sorted(wanted))
            config = batch.server_config(launch, sorted(wanted), warm=True)
            argv = list(wrap([sys.executable, "-c", batch.server_source()]))
            started = _Server.start(argv, cwd=cwd, env=env, config=config, preload=wanted)
            self.launches += 1
            if not isinstance(started, _Server):
                if started is not None:
                    self._refused[key] = started  # it cannot be made pid 1 here: as before, a launch per run
                return None
            server = started
        outcomes, healthy = server.run(commands, output_cap)
        if not healthy:
            server.close()
            return outcomes
        self._live[key] = server
        while len(self._live) > self.limit:
            self._live.popitem(last=False)[1].close()
        return outcomes

    def refused(self) -> list[str]:
        """Why servers could not be kept (one reason per launch configuration)."""
        return list(self._refused.values())

    def close(self) -> None:
        """End every server."""
        while self._live:
            self._live.popitem()[1].close()

    def __enter__(self) -> Servers:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
