"""Token usage read off model responses as they pass through the gateway.

Four wire protocols: Anthropic Messages, OpenAI Chat Completions, OpenAI Responses and Gemini
(`usageMetadata`), each as one JSON body or as server-sent events. The raw `usage` objects are kept
verbatim (merged key by key, later events winning: Anthropic's `message_delta` carries
the final output count, OpenAI sends usage once at the end) and normalised into the
runner's terms, where `input_tokens` means uncached input.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from harness.artifacts.readers import MAX_TOKENS


class Usage(BaseModel):
    """One response's usage, normalised; `raw` is what the provider sent."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input_tokens: int = Field(default=0, description="Input tokens, uncached.")
    output_tokens: int = Field(
        default=0, description="Output tokens (reasoning included where the provider counts it so)."
    )
    cache_read_tokens: int = Field(default=0, description="Input tokens read from the provider's cache.")
    cache_write_tokens: int = Field(default=0, description="Input tokens written to the provider's cache.")
    reasoning_tokens: int = Field(
        default=0, description="Reasoning tokens, a subset of output where reported."
    )
    raw: dict[str, Any] = Field(
        default_factory=dict, description="The provider's usage object(s), merged, verbatim."
    )


def _int(value: Any) -> int:
    """A count the provider sent; anything but a sane non-negative integer counts as none."""
    ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_TOKENS
    return value if ok else 0


def normalise(raw: dict[str, Any]) -> Usage:
    """Map a provider usage object onto `Usage`."""
    if "prompt_tokens" in raw or "completion_tokens" in raw:  # Chat Completions
        cached = _int((raw.get("prompt_tokens_details") or {}).get("cached_tokens"))
        return Usage(
            input_tokens=max(0, _int(raw.get("prompt_tokens")) - cached),
            output_tokens=_int(raw.get("completion_tokens")),
            cache_read_tokens=cached,
            reasoning_tokens=_int((raw.get("completion_tokens_details") or {}).get("reasoning_tokens")),
            raw=raw,
        )
    if "input_tokens_details" in raw or "output_tokens_details" in raw:  # Responses
        cached = _int((raw.get("input_tokens_details") or {}).get("cached_tokens"))
        return Usage(
            input_tokens=max(0, _int(raw.get("input_tokens")) - cached),
            output_tokens=_int(raw.get("output_tokens")),
            cache_read_tokens=cached,
            reasoning_tokens=_int((raw.get("output_tokens_details") or {}).get("reasoning_tokens")),
            raw=raw,
        )
    if "promptTokenCount" in raw or "candidatesTokenCount" in raw:  # Gemini usageMetadata
        cached, thoughts = _int(raw.get("cachedContentTokenCount")), _int(raw.get("thoughtsTokenCount"))
        return Usage(
            input_tokens=_int(raw.get("promptTokenCount")) - cached,
            output_tokens=_int(raw.get("candidatesTokenCount")) + thoughts,
            cache_read_tokens=cached,
            reasoning_tokens=thoughts,
            raw=raw,
        )
    return Usage(
        input_tokens=_int(raw.get("input_tokens")),
        output_tokens=_int(raw.get("output_tokens")),
        cache_read_tokens=_int(raw.get("cache_read_input_tokens")),
        cache_write_tokens=_int(raw.get("cache_creation_input_tokens")),
        raw=raw,
    )


def _usage_of(obj: Any) -> dict[str, Any] | None:
    if not isinstance(obj, dict):
        return None
    for holder in (obj, obj.get("message"), obj.get("response")):
        for key in ("usage", "usageMetadata"):
            if isinstance(holder, dict) and isinstance(holder.get(key), dict):
                found: dict[str, Any] = holder[key]
                return found
    return None


class UsageReader:
    """Fed a response body chunk by chunk; knows its usage and model at the end."""

    def __init__(self, content_type: str) -> None:
        self.stream = "text/event-stream" in content_type
        self._json = "json" in content_type
        self._buffer = bytearray()
        self._merged: dict[str, Any] = {}
        self.model: str | None = None
        self.seen = False

    def _take(self, obj: Any) -> None:
        usage = _usage_of(obj)
        if usage is not None:
            self.seen = True
            self._merged.update(usage)
        if isinstance(obj, dict):
            for holder in (obj, obj.get("message"), obj.get("response")):
                for key in ("model", "modelVersion"):  # modelVersion: Gemini
                    if isinstance(holder, dict) and isinstance(holder.get(key), str):
                        self.model = holder[key]

    def feed(self, chunk: bytes) -> None:
        """Take the next piece of the body."""
        if not (self.stream or self._json):
            return
        self._buffer += chunk
        if not self.stream:
            return
        while b"\n" in self._buffer:
            line, _, rest = bytes(self._buffer).partition(b"\n")
            self._buffer = bytearray(rest)
            text = line.decode("utf-8", errors="replace").rstrip("\r")
            if text.startswith("data:"):
                payload = text[5:].strip()
                if payload and payload != "[DONE]":
                    with contextlib.suppress(json.JSONDecodeError):
                        self._take(json.loads(payload))

    def finish(self) -> Usage | None:
        """The usage of the whole response, or None when it carried none."""
        if self._json and not self.stream and self._buffer:
            with contextlib.suppress(json.JSONDecodeError, UnicodeDecodeError):
                self._take(json.loads(bytes(self._buffer)))
        self._buffer.clear()
        return normalise(self._merged) if self.seen else None
