"""gateway.jsonl: one line per request the gateway saw, forwarded or refused."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.artifacts.names import GATEWAY_LOG
from harness.artifacts.readers import Turn
from harness.gateway.usage import Usage

GATEWAY_SCHEMA = 1
LOG_NAME = GATEWAY_LOG


class GatewayRecord(BaseModel):
    """One request through the gateway."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: int = Field(default=GATEWAY_SCHEMA, description="Record version.")
    t: float = Field(description="Epoch seconds when the request arrived.")
    duration_s: float = Field(description="Seconds until the response was fully relayed (or refused).")
    method: str = Field(description="HTTP method.")
    path: str = Field(
        description="Path as the agent sent it, route prefix included (the URL or host:port of a proxy request)."
    )
    route: str | None = Field(description="Route name, None when no route matched.")
    upstream: str | None = Field(default=None, description="URL forwarded to, None when refused.")
    allowed: bool = Field(description="The request was forwarded.")
    reason: str = Field(default="", description="Why it was refused, or the upstream error.")
    limit: str | None = Field(
        default=None, description="The trial's budget that refused it (total_tokens, cost_usd, ...)."
    )
    status: int = Field(description="HTTP status relayed to the agent.")
    stream: bool = Field(default=False, description="The response was server-sent events.")
    request_bytes: int = Field(default=0, description="Request body size (bytes up a CONNECT tunnel).")
    response_bytes: int = Field(
        default=0, description="Response body size relayed (bytes down a CONNECT tunnel)."
    )
    model: str | None = Field(default=None, description="Model named by the response (or the request).")
    usage: Usage | None = Field(
        default=None, description="Usage read off the response; None when it had none."
    )
    host: str | None = Field(default=None, description="Target host of a proxy request or CONNECT tunnel.")
    port: int | None = Field(default=None, description="Target port of a proxy request or CONNECT tunnel.")


class LogWriter:
    """Appends records, one flushed line each, from any thread."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()

    def write(self, record: GatewayRecord) -> None:
        line = record.model_dump_json() + "\n"
        with self._lock, self.path.open("a", encoding="utf-8") as fh:
            fh.write(line)


def read_log(path: Path) -> list[GatewayRecord]:
    """Every record of a gateway log (empty when it does not exist; a torn last line is skipped)."""
    if not path.exists():
        return []
    records = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.strip():
            try:
                records.append(GatewayRecord.model_validate_json(line))
            except ValidationError:
                continue  # only the harness writes this log: a killed run's half line, never a forgery
    return records


def gateway_turns(path: Path) -> list[Turn]:
    """One `Turn` per forwarded request that carried usage: the account of record where a gateway ran.

    A turn's context is its whole prompt: uncached input plus cache reads and writes.
    """
    turns = []
    for record in read_log(path):
        usage = record.usage
        if record.allowed and usage is not None:
            prompt = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
            turns.append(
                Turn(
                    t=record.t,
                    input=usage.input_tokens,
                    output=usage.output_tokens,
                    cache_read=usage.cache_read_tokens,
                    cache_write=usage.cache_write_tokens,
                    reasoning=usage.reasoning_tokens,
                    context=prompt,
                    context_limit=None,
                    model=record.model,
                )
            )
    return turns


PROVIDER_FAILED = frozenset({408, 429})
"""Statuses below 500 that say the provider, not the request, failed (timeout, rate limit)."""
KEY_REFUSED = 401
"""The provider refused the key: the harness's failure when the key is the one the gateway injects."""


def provider_failures(
    path: Path, *, route: str, since: float, until: float, keyed: bool = False
) -> list[GatewayRecord]:
    """Requests on the model `route` in [since, until] that the provider, or the way to it, failed:
    forwarded, and answered 5xx (529 "overloaded" included), 408 or 429, or not answered at all
    (the gateway's 502 `upstream: ...`: refused connection, timeout, reset); with `keyed` (the
    gateway injects the API key, the agent's own credentials are stripped) a 401 too.

    This is the harness's own evidence of a provider or infrastructure failure (the log is written
    outside the sandbox). A refusal of the gateway's (a path off the allowlist, a spent budget) is
    the agent's doing and never counts; neither does the forward proxy's traffic to other hosts
    under `network: on` (the agent chooses them), nor a 401 for a key the agent sent itself."""
    failed = PROVIDER_FAILED | ({KEY_REFUSED} if keyed else set())
    return [
        r
        for r in read_log(path)
        if r.route == route
        and r.allowed
        and since <= r.t <= until
        and (r.status >= 500 or r.status in failed or r.reason.startswith("upstream:"))
    ]


def usage_totals(path: Path) -> dict[str, int]:
    """Totals over forwarded requests that carried usage: turns and token counts.

    The independent account to set against the adapter's usage.jsonl.
    """
    turns = gateway_turns(path)
    totals = {"turns": len(turns)}
    for kind in ("input", "output", "cache_read", "cache_write", "reasoning"):
        totals[f"{kind}_tokens"] = sum(getattr(t, kind) for t in turns)
    totals["refused"] = sum(1 for record in read_log(path) if not record.allowed)
    return totals


def dumps(data: object) -> str:
    """Compact JSON for error bodies."""
    return json.dumps(data, separators=(",", ":"))
