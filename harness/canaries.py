"""Canaries: proof, before the agent starts, that the cell is what it claims to be.

`absent` names must not resolve on the agent's PATH (`command -v` in the agent's own
environment and sandbox); `must_fail` commands (a network probe under `network: off`) must
exit non-zero; `must_pass` commands must exit zero. Any failed canary makes the run invalid:
it is excluded from rates and counted by the report.
"""

from __future__ import annotations

import shlex

from compiler.contract import Canaries
from harness.launch import Launcher
from harness.records import CanaryResult

TIMEOUT_S = 30.0


def _tail(data: bytes, limit: int = 300) -> str:
    return data.decode("utf-8", errors="replace").strip()[-limit:]


def run(canaries: Canaries, launcher: Launcher) -> tuple[CanaryResult, ...]:
    """Run every canary; the result is ok only where the canary held."""
    results: list[CanaryResult] = []
    for name in canaries.absent:
        done = launcher.shell(f"command -v {shlex.quote(name)}", timeout_s=TIMEOUT_S, capture=True)
        found = done.exit_code == 0
        results.append(
            CanaryResult(
                kind="absent",
                command=name,
                ok=not found,
                detail=f"{name} is reachable at {_tail(done.output)}" if found else "not found",
            )
        )
    for command in canaries.must_fail:
        done = launcher.shell(command, timeout_s=TIMEOUT_S, capture=True)
        held = done.exit_code != 0
        detail = f"exit {done.exit_code}" + (
            "" if held else f": succeeded, expected failure; {_tail(done.output)}"
        )
        results.append(CanaryResult(kind="must_fail", command=command, ok=held, detail=detail))
    for command in canaries.must_pass:
        done = launcher.shell(command, timeout_s=TIMEOUT_S, capture=True)
        held = done.exit_code == 0
        detail = f"exit {done.exit_code}" + ("" if held else f": {_tail(done.output)}")
        results.append(CanaryResult(kind="must_pass", command=command, ok=held, detail=detail))
    return tuple(results)


def invalid_reason(results: tuple[CanaryResult, ...]) -> str | None:
    """Why the run is invalid, or None when every canary held."""
    failed = [f"canary {r.kind} {r.command!r} failed: {r.detail}" for r in results if not r.ok]
    return "; ".join(failed) or None
