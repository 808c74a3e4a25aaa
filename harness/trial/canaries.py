"""Canaries: proof, before the agent starts, that the cell is what it claims to be.

`absent` names must not resolve on the agent's PATH (`command -v` in the agent's own
environment and sandbox); `must_fail` commands must exit non-zero; `must_pass` commands must
exit zero; `network: off` proves that nothing reaches a listener the harness opens on the
host's loopback (`harness.sandbox.probe`: the listener counts connections, so the probe's exit
status alone cannot fake it), `network: on` that the listener answers. No canary sends a packet
off the machine. `ASSAY_PROBE_URL` names that listener for a spec's own commands. Any failed
canary makes the run invalid: it is excluded from rates and counted by the report.

All canaries of a trial run in ONE launch of the agent's sandbox (a launch costs more than
most canaries), each in its own subshell (an `absent` name, a builtin's look-up, in the shell
itself), its output and exit status framed by markers: as the
first phase of the agent's own launch (`Phase`, through `harness.sandbox.gate`: the agent starts
once they are over, in the same sandbox), or alone (`run`).
"""

from __future__ import annotations

import re
import shlex
from typing import Literal, NamedTuple

from compiler.contract import Canaries, Job
from harness.artifacts.records import CanaryResult
from harness.sandbox import proc
from harness.sandbox.isolation import Isolation
from harness.sandbox.launch import Launcher
from harness.sandbox.probe import LoopbackProbe

TIMEOUT_S = 30.0
_MARK = "@@assay-canary"
_END = re.compile(rb"\n?" + _MARK.encode() + rb"-end (\d+) (\d+)\n")

Kind = Literal["absent", "must_fail", "must_pass", "network"]


def _tail(data: bytes, limit: int = 300) -> str:
    return data.decode("utf-8", errors="replace").strip()[-limit:]


def _script(items: list[tuple[Kind, str]], probe: LoopbackProbe) -> str:
    lines = [f"export ASSAY_PROBE_URL={shlex.quote(probe.url)}"]
    for index, (kind, what) in enumerate(items):
        if kind == "absent":  # a builtin, run by the phase's shell itself: no process to start
            command = f"command -v {shlex.quote(what)} </dev/null 2>&1"
        else:
            command = f"( {probe.command() if kind == 'network' else what}\n) </dev/null 2>&1"
        lines.append(
            f"printf '{_MARK}-begin {index}\\n'; {command}; printf '\\n{_MARK}-end {index} %d\\n' $?"
        )
    return "\n".join(lines) + "\n"


def _parse(output: bytes, count: int) -> dict[int, tuple[int, bytes]]:
    found: dict[int, tuple[int, bytes]] = {}
    for index in range(count):
        begin = output.find(f"{_MARK}-begin {index}\n".encode())
        if begin < 0:
            continue
        body_start = begin + len(f"{_MARK}-begin {index}\n")
        end = _END.search(output, body_start)
        if end is None or int(end.group(1)) != index:
            continue
        found[index] = (int(end.group(2)), output[body_start : end.start()])
    return found


class Phase(NamedTuple):
    """The canaries of a trial as one shell script, and what each of its parts proves."""

    script: str
    items: list[tuple[Kind, str]]
    probe: LoopbackProbe
    """The loopback listener the script's network probes try; listening until `close()`."""

    def close(self) -> None:
        """Stop the loopback listener (after `verdicts`)."""
        self.probe.close()

    @property
    def timeout_s(self) -> float:
        return TIMEOUT_S * len(self.items)


def phase(canaries: Canaries) -> Phase | None:
    """The canaries as a script for the agent's sandbox, their loopback listener already listening
    (the caller closes it: `Phase.close`); None when the cell has none."""
    items: list[tuple[Kind, str]] = [
        *(("absent", n) for n in canaries.absent),
        *(("must_fail", c) for c in canaries.must_fail),
        *(("must_pass", c) for c in canaries.must_pass),
        *((("network", canaries.network),) if canaries.network else ()),
    ]
    if not items:
        return None
    probe = LoopbackProbe().start()
    return Phase(_script(items, probe), items, probe)


def run(canaries: Canaries, launcher: Launcher) -> tuple[CanaryResult, ...]:
    """Run every canary in a launch of its own; the result is ok only where the canary held."""
    found = phase(canaries)
    if found is None:
        return ()
    try:
        done = launcher.shell(found.script, timeout_s=found.timeout_s, capture=True)
        ended = "timed out" if done.timed_out else f"launch exit {done.exit_code}"
        return verdicts(found, done.output, ended=ended)
    finally:
        found.close()


def verdicts(found: Phase, output: bytes, *, ended: str) -> tuple[CanaryResult, ...]:
    """Each canary's verdict from the script's output; `ended` says how a launch that cut the
    script short ended ("timed out", "launch exit 1")."""
    outcomes = _parse(output, len(found.items))
    results: list[CanaryResult] = []
    for index, (kind, what) in enumerate(found.items):
        if index not in outcomes:
            detail = f"did not run to an end ({ended})"
            results.append(
                CanaryResult(
                    kind=kind, command=_shown(kind, what), ok=False, detail=detail + f": {_tail(output)}"
                )
            )
            continue
        code, out = outcomes[index]
        if kind == "absent":
            ok = code != 0
            detail = "not found" if ok else f"{what} is reachable at {_tail(out)}"
        elif kind == "network":
            ok, detail = _network(what, code, found.probe.connections, _tail(out))
        elif kind == "must_fail":
            ok = code != 0
            detail = f"exit {code}" + ("" if ok else f": succeeded, expected failure; {_tail(out)}")
        else:
            ok = code == 0
            detail = f"exit {code}" + ("" if ok else f": {_tail(out)}")
        results.append(CanaryResult(kind=kind, command=_shown(kind, what), ok=ok, detail=detail))
    return tuple(results)


def _shown(kind: Kind, what: str) -> str:
    return f"network: {what}" if kind == "network" else what


def _network(wanted: str, code: int, arrived: int, said: str) -> tuple[bool, str]:
    if wanted == "off":
        if arrived:
            return False, f"{arrived} connection(s) from the sandbox reached the host's loopback: {said}"
        if code == 1:
            return True, f"nothing reached the host's loopback ({said})"
        return False, f"probe exit {code}: {said}"
    if code == 0:
        return True, "the host's loopback answered"
    return False, f"the host's loopback did not answer (probe exit {code}): {said}"


def invalid_reason(results: tuple[CanaryResult, ...]) -> str | None:
    """Why the run is invalid, or None when every canary held."""
    failed = [f"canary {r.kind} {r.command!r} failed: {r.detail}" for r in results if not r.ok]
    return "; ".join(failed) or None


def unenforceable(job: Job, iso: Isolation) -> str | None:
    """Why the cell's network: off cannot hold here (the run is then invalid, not silently open)."""
    if job.cell.provisions.network or iso.enforces_network_off or proc.pidns_available():
        return None
    return f"network: off cannot be enforced (isolation {iso.name}, no network namespace on this machine)"
