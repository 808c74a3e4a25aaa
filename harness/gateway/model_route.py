"""The gateway of one trial: what the runner needs to put an agent's model behind it.

An agent whose arguments name a model endpoint (`base_url`) reaches it only through a
gateway when the trial runs under a real isolation: the adapter is told the in-sandbox
URL instead, its argv is prefixed with the forwarder, the gateway's folder is mounted,
and the API key named by `api_key_env` is injected by the gateway (the adapter gets
`PLACEHOLDER_KEY`, the variable is removed from the sandbox's environment).

    with for_trial(job, args, run_dir=run_dir, isolation=iso) as gw:
        args = gw.args if gw else args ...
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from compiler.contract import Job
from harness.artifacts.lock import host_tmp
from harness.gateway import DEFAULT_PORT, PLACEHOLDER_KEY, Gateway, Meter, Route, usage_totals
from harness.gateway.log import LOG_NAME
from harness.sandbox.isolation.base import Isolation, Mount

ROUTE = "model"
MODEL_PATHS = ("/v1/", "/chat/", "/responses", "/messages", "/models", "/v1beta/models/")
"""Paths of the model APIs (Anthropic Messages, OpenAI Chat Completions and Responses, Gemini)."""
BEARER_ADAPTERS = frozenset({"codex", "mini_swe_agent", "aider", "opencode"})
GOOGLE_KEY_ADAPTERS = frozenset({"gemini_cli"})
"""Adapters whose key goes in `x-goog-api-key` (the Gemini API)."""


@dataclass(frozen=True)
class TrialGateway:
    """A running gateway and how the trial uses it."""

    gateway: Gateway
    args: dict[str, Any]
    """The adapter arguments with base_url (and the key) pointing at the gateway."""
    port: int
    hidden_env: tuple[str, ...]
    """Variables the sandbox must not get (the injected key)."""

    def mount(self) -> Mount:
        """The gateway folder, read-only."""
        return self.gateway.mount()

    def wrap(self, argv: Sequence[str]) -> list[str]:
        """The agent's argv behind the in-sandbox forwarder."""
        return self.gateway.wrap_argv(argv, port=self.port)

    @property
    def usage_log(self) -> Path | None:
        """gateway.jsonl when the model goes through this gateway: the trial's account of record."""
        return self.gateway.log_path if ROUTE in self.gateway.routes else None

    @property
    def carries_network(self) -> bool:
        """`network: on`: the sandbox keeps its own network namespace and gets out only through here."""
        return self.gateway.open_network

    def scrub(self, env: Mapping[str, str]) -> dict[str, str]:
        """The sandbox environment without the injected key; under `network: on` with the proxy variables."""
        kept = {k: v for k, v in env.items() if k not in self.hidden_env}
        return {**kept, **proxy_env(self.port)} if self.carries_network else kept

    @property
    def meter(self) -> Meter | None:
        """The trial's budgets, kept by the gateway (None: the trial has none)."""
        return self.gateway.meter

    def summary(self) -> dict[str, Any]:
        """For run.json: the log's path and its totals (the independent usage account)."""
        return {"log": LOG_NAME, **usage_totals(self.gateway.log_path)}


def proxy_env(port: int) -> dict[str, str]:
    """The variables that send a client's traffic through the in-sandbox forwarder to the gateway.

    `NO_PROXY` keeps the model route (`http://127.0.0.1:PORT/model`) a direct request.
    """
    url = f"http://127.0.0.1:{port}"
    no_proxy = "127.0.0.1,localhost"
    return {
        "HTTP_PROXY": url,
        "HTTPS_PROXY": url,
        "http_proxy": url,
        "https_proxy": url,
        "ALL_PROXY": url,
        "all_proxy": url,
        "NO_PROXY": no_proxy,
        "no_proxy": no_proxy,
    }


def _key_headers(job: Job, args: Mapping[str, Any]) -> tuple[dict[str, str], tuple[str, ...]]:
    name = args.get("api_key_env")
    if not isinstance(name, str) or not os.environ.get(name):
        return {}, ()
    key = os.environ[name]
    if job.agent.adapter in GOOGLE_KEY_ADAPTERS:
        return {"x-goog-api-key": key}, (name,)
    if job.agent.adapter in BEARER_ADAPTERS or args.get("auth_token"):
        return {"Authorization": f"Bearer {key}"}, (name,)
    return {"x-api-key": key}, (name,)


@contextlib.contextmanager
def for_trial(
    job: Job, args: Mapping[str, Any], *, run_dir: Path, isolation: Isolation, meter: Meter | None = None
) -> Iterator[TrialGateway | None]:
    """A gateway for the trial, or None when there is nothing to put behind one.

    None when the isolation is `none` (no sandbox to keep the traffic in; the endpoint is then
    used directly), or under `network: off` when the agent names no `base_url` (the sandbox then
    has no network at all). Under `network: on` there is always one: the sandbox keeps its own
    network namespace and the gateway is also its forward proxy with an open allowlist, so every
    run has a traffic log; the model route is then open on any path. `meter` keeps the trial's
    budgets on the model route (`harness.gateway.budget`).
    """
    upstream = args.get("base_url")
    network = job.cell.provisions.network
    has_model = isinstance(upstream, str) and upstream.startswith(("http://", "https://"))
    if isolation.name == "none" or not (has_model or network):
        yield None
        return
    headers, hidden = _key_headers(job, args) if has_model else ({}, ())
    routes = (
        [Route(ROUTE, str(upstream), paths=None if network else MODEL_PATHS, headers=headers)]
        if has_model
        else []
    )
    port = DEFAULT_PORT  # the sandbox's own loopback, under on as under off
    # The socket's folder is short and outside the run dir: a Unix socket path may not exceed
    # 107 bytes, and a run dir deep in a project easily does.
    folder = host_tmp("gw")
    gateway = Gateway(folder, routes, log_path=run_dir / LOG_NAME, open_network=network, meter=meter)
    rewritten = {**args, "base_url": gateway.base_url(ROUTE, port=port)} if has_model else dict(args)
    if headers:
        rewritten.pop("api_key_env", None)
        rewritten["api_key"] = PLACEHOLDER_KEY
    try:
        with gateway:
            yield TrialGateway(gateway=gateway, args=rewritten, port=port, hidden_env=hidden)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
