"""The check commands of one workspace in one sandbox launch (`harness.sandbox.batch`).

A kind that runs one command says so (`batchable(spec)`). The engine first asks each such check
for its command without running it: the kind runs as usual with a `runner` that records the
call and stops it there. The commands then run in one batch, each with its own timeout and a
workspace reset to the state the batch began with, and every check is judged as usual, its
runner handing back the batch's result for exactly that call. A check the batch did not
report on, or that asks for another call, runs on its own as before: the batch changes the cost,
never the verdict. A grading session's warm servers (`CheckContext.servers`) take the batch when
they can, a single command too (`harness.sandbox.batch_warm`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple

from compiler.contract import CheckSpec
from harness.checks import _proc
from harness.checks.base import CheckContext, CheckError, CheckUnavailable
from harness.checks.registry import get_kind
from harness.sandbox import batch
from harness.sandbox.batch import Command, Launch, Outcome

MARK = "\x00assay-batch"
"""Stands in for the sandbox wrapper while a command is recorded: the batch wraps the whole launch."""
PRELOAD = ("pytest",)
"""Imported once in the batch's interpreter when a command mentions it."""


class Call(NamedTuple):
    """One command as a kind asked for it (argv behind MARK when it would be wrapped)."""

    argv: tuple[str, ...]
    cwd: Path
    env: dict[str, str]
    timeout_s: float


class _Planned(BaseException):
    """Stops a kind at its command (a BaseException: no kind's own handler may take it)."""

    def __init__(self, call: Call) -> None:
        super().__init__(call.argv)
        self.call = call


def _record(
    argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], timeout_s: float, namespaces: bool
) -> _proc.Completed:
    raise _Planned(Call(tuple(argv), cwd, dict(env), timeout_s))


def _mark(argv: Sequence[str]) -> list[str]:
    return [MARK, *argv]


def plan(spec: CheckSpec, workspace: Path, ctx: CheckContext) -> Call | None:
    """The command the check would run, or None (it runs none, or is not batchable)."""
    probe = replace(ctx, runner=_record, wrap=_mark if ctx.wrap is not None else None)
    try:
        kind = get_kind(spec.kind)
        batchable = getattr(kind, "batchable", None)
        if batchable is None or not batchable(spec):
            return None
        kind.run(spec, workspace, probe)
    except _Planned as planned:
        return planned.call
    except (CheckError, CheckUnavailable, OSError, ValueError, TypeError, KeyError):
        return None  # it fails before any command: it is judged on its own, as before
    return None


def prerun(
    checks: Sequence[CheckSpec], workspace: Path, ctx: CheckContext
) -> dict[int, tuple[Call, _proc.Completed]]:
    """Run the batchable checks' commands in one launch: by check index, the call and its result."""
    if ctx.runner is not None or (ctx.wrap is not None and not ctx.sandboxed):
        return {}  # already replaying; or a wrapper that is no pid namespace of its own
    calls = {i: c for i, spec in enumerate(checks) if (c := plan(spec, workspace, ctx)) is not None}
    calls = {
        i: c for i, c in calls.items() if c.cwd == workspace and (ctx.wrap is None or c.argv[:1] == (MARK,))
    }
    if not calls or (len(calls) < 2 and ctx.servers is None):
        return {}  # one command alone starts no sooner in a batch of its own; a warm server is running
    commands = [
        Command(c.argv[1:] if ctx.wrap is not None else c.argv, c.env, c.timeout_s) for c in calls.values()
    ]
    mentioned = " ".join(" ".join(c.argv) for c in commands)
    launch = Launch(wrap=ctx.wrap, sandboxed=ctx.sandboxed, home=getattr(ctx.wrap, "home", None))
    preload = [name for name in PRELOAD if name in mentioned]
    outcomes = (
        ctx.servers.run(commands, cwd=workspace, launch=launch, preload=preload, output_cap=_proc.OUTPUT_CAP)
        if ctx.servers is not None
        else None
    )
    if outcomes is None:
        if len(calls) < 2:
            return {}
        outcomes = batch.run_batch(
            commands, cwd=workspace, launch=launch, preload=preload, output_cap=_proc.OUTPUT_CAP
        )
    return {
        i: (call, completed(outcome))
        for (i, call), outcome in zip(calls.items(), outcomes, strict=True)
        if outcome is not None
    }


def completed(outcome: Outcome) -> _proc.Completed:
    """A batch outcome as the kinds read a command's result."""
    return _proc.Completed(
        exit_code=outcome.exit_code,
        stdout=outcome.stdout.decode("utf-8", "replace"),
        stderr=outcome.stderr.decode("utf-8", "replace"),
        timed_out=outcome.timed_out,
        capped=outcome.capped,
        duration_s=outcome.duration_s,
    )


def replay(ctx: CheckContext, call: Call, done: _proc.Completed) -> CheckContext:
    """A context whose runner hands back `done` for exactly `call`, once; any other call runs."""
    pending = [done]

    def runner(
        argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], timeout_s: float, namespaces: bool
    ) -> _proc.Completed:
        if pending and Call(tuple(argv), cwd, dict(env), timeout_s) == call:
            return pending.pop()
        real = list(argv)
        if ctx.wrap is not None and real[:1] == [MARK]:
            real = list(ctx.wrap(real[1:]))
        return _proc.run_command(real, cwd=cwd, env=env, timeout_s=timeout_s, namespaces=namespaces)

    return replace(ctx, runner=runner, wrap=_mark if ctx.wrap is not None else None)
