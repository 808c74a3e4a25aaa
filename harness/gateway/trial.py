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
import socket
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from compiler.contract import Job
from harness.gateway import DEFAULT_PORT, PLACEHOLDER_KEY, Gateway, Route, usage_totals
from harness.gateway.log import LOG_NAME
from harness.isolation.base import Isolation, Mount

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

    def scrub(self, env: Mapping[str, str]) -> dict[str, str]:
        """The sandbox environment without the injected key."""
        return {k: v for k, v in env.items() if k not in self.hidden_env}

    def summary(self) -> dict[str, Any]:
        """For run.json: the log's path and its totals (the independent usage account)."""
        return {"log": LOG_NAME, **usage_totals(self.gateway.log_path)}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


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
def for_trial(job: Job, args: Mapping[str, Any], *, run_dir: Path, isolation: Isolation) -> Iterator[TrialGateway | None]:
    """A gateway for the trial's model endpoint, or None when there is nothing to put behind one.

    None when the agent names no `base_url`, or the isolation is `none` (no sandbox to keep the
    traffic in; the endpoint is then used directly). `network: on` gets an open allowlist on the
    model's host and a free port, since the sandbox then shares the host's loopback.
    """
    upstream = args.get("base_url")
    if not isinstance(upstream, str) or not upstream.startswith(("http://", "https://")) or isolation.name == "none":
        yield None
        return
    network = job.cell.provisions.network
    headers, hidden = _key_headers(job, args)
    route = Route(ROUTE, upstream, paths=None if network else MODEL_PATHS, headers=headers)
    port = _free_port() if network else DEFAULT_PORT
    # The socket's folder is short and outside the run dir: a Unix socket path may not exceed
    # 107 bytes, and a run dir deep in a project easily does.
    folder = Path(tempfile.mkdtemp(prefix="assay-gw-"))
    gateway = Gateway(folder, [route], log_path=run_dir / LOG_NAME)
    rewritten = {**args, "base_url": gateway.base_url(ROUTE, port=port)}
    if headers:
        rewritten.pop("api_key_env", None)
        rewritten["api_key"] = PLACEHOLDER_KEY
    try:
        with gateway:
            yield TrialGateway(gateway=gateway, args=rewritten, port=port, hidden_env=hidden)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
