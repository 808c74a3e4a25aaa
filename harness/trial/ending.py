"""Whose doing the end of a session was: the harness's (the run failed to run) or the agent's (graded).

The agent under test chooses how its session ends. Whatever it can bring about by itself — running
out its time, passing its output cap, a sandbox limit that stops it, a non-zero exit, a signal, an
exit 75 ("provider or infrastructure failure") with nothing on the harness's side to show one —
is its own: recorded as an `AgentEnd` and graded on what it left, so an agent about to fail cannot
take its run out of the rates. `failed_to_run` is kept for what the harness itself saw: an exit 75
while the model gateway logged a provider failure (a 5xx, 529, 408 or 429 answer, a 401 for the key
it injects, or no answer at all), a launch check that failed (`harness.trial.agent.launch_check`), a crash of the harness.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from compiler.contract import Job
from harness.artifacts.records import AgentEnd
from harness.gateway.log import GatewayRecord, provider_failures
from harness.gateway.model_route import ROUTE
from harness.sandbox import proc
from harness.sandbox.gate import Gate
from harness.sandbox.isolation import limits
from harness.trial import agent

INFRA_EXIT = 75
"""The adapters' "provider or infrastructure failure" exit status (retried up to `infra_retries`)."""


class Attempt(NamedTuple):
    """The gateway's view of one attempt: its log, the attempt's window, whose key the model got."""

    log: Path
    since: float
    until: float
    keyed: bool
    """The gateway injects the API key (the agent's own credentials are stripped)."""


class Ending(NamedTuple):
    """How one session ended, for its StepRecord."""

    error: str | None = None
    """A harness-side cause: the run failed to run."""
    agent_end: AgentEnd | None = None
    """The agent's own doing: the run is graded on what it left."""


def ending(
    job: Job,
    done: proc.ProcResult,
    *,
    enforced: Mapping[str, str],
    retries: int,
    spent: bool,
    gateway: Attempt | None,
) -> Ending:
    """Classify the last attempt of a session.

    Args:
        job: The trial.
        done: How the adapter's last launch ended.
        enforced: How each limit was enforced for it (a size a filesystem kept stopped nothing).
        retries: Exit-75 retries spent in this session.
        spent: A budget of the trial is spent (the gateway refused, and then ended the agent): the
            run is graded on what it left and counted as a budget stop, whatever the adapter did next.
        gateway: The last attempt as the gateway saw it, when a gateway carried the model.
    """
    if done.timed_out:
        return _agent("timeout", f"the agent timed out after {job.limits.timeout_s:g} s")
    if done.output_capped:
        return _agent("output", f"the agent's output passed the cap of {job.limits.output_bytes} bytes")
    if spent:  # the gateway refused the agent's model past a budget, then ended it: `limits_hit` says so
        return Ending()
    if done.exit_code == INFRA_EXIT:
        tries = f"after {retries} retr{'y' if retries == 1 else 'ies'}"
        failed = (
            provider_failures(
                gateway.log, route=ROUTE, since=gateway.since, until=gateway.until, keyed=gateway.keyed
            )
            if gateway
            else []
        )
        if failed:
            return Ending(error=f"infrastructure failure: adapter exited 75 {tries}; {_seen(failed)}")
        nothing = (
            "the model gateway saw no provider failure in that attempt"
            if gateway is not None
            else "no model gateway carried the model, so nothing on the harness's side shows one"
        )
        return _agent(
            "claimed_infra",
            f"the adapter exited 75 (provider or infrastructure failure) {tries}, but {nothing}",
        )
    stopped = limits.stopping(done.limits_hit, enforced)
    if stopped:  # a size the kernel kept stopped nothing: the write failed, the agent went on
        return _agent("limit", f"the agent hit its {', '.join(stopped)} limit")
    code = done.exit_code
    if code is not None and code < 0:
        return _agent("exit", f"the agent was killed by signal {-code}")
    if code not in (None, 0):
        return _agent("exit", f"the agent exited {code}")
    return Ending()


def _agent(cause: str, detail: str) -> Ending:
    return Ending(agent_end=AgentEnd.model_validate({"cause": cause, "detail": detail}))


def _seen(failed: Sequence[GatewayRecord]) -> str:
    answers = sorted({str(r.status) + (f" {r.reason[:120]}" if r.reason else "") for r in failed})
    return f"the model gateway saw {len(failed)} failed model request(s): " + "; ".join(answers[:5])


def in_step(end: AgentEnd, index: int, total: int, name: str) -> AgentEnd:
    """The end as a multi-step run records it: naming its step, saying the later ones never ran."""
    if total <= 1:
        return end
    later = "; the later steps never ran" if index < total else ""
    return end.model_copy(update={"step": f"{index}/{total} ({name})", "detail": end.detail + later})


def never_started(gate: Gate, done: proc.ProcResult) -> str:
    """Why a later launch never reached its gate (its launch check failed, or the sandbox did not
    start): a harness-side cause, since nothing of the agent's runs before the gate."""
    refused = agent.probe_failure(gate.output)
    if refused is not None:
        return refused[0]
    printed = gate.output.decode("utf-8", errors="replace").strip()[-500:]
    ended = "timed out" if done.timed_out else f"exit {done.exit_code}"
    return f"the adapter's launch never reached its start ({ended}): {printed or 'nothing printed'}"
