"""Protocol-neutral values shared by the three wire protocols."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, NamedTuple


@dataclass(frozen=True)
class RequestView:
    """What the server needs to know about a request, whatever its protocol."""

    stream: bool
    """The client asked for a streamed (SSE) answer."""
    has_tools: bool
    """The request declares at least one tool."""
    system_text: str
    """All system/developer/instructions text, joined."""
    assistant_turns: int
    """Assistant turns already in the history (the `history` step index)."""
    assistant_texts: list[str] = field(default_factory=list)
    """Text of every assistant message in the history (for `echo` mode)."""
    model: str = ""
    """Model id the client asked for."""
    include_usage: bool = True
    """Chat Completions streaming: the client asked for a usage chunk."""


@dataclass(frozen=True)
class OutCall:
    """A tool call as sent: id, name and the JSON argument string."""

    call_id: str
    name: str
    arguments: str
    namespace: str | None = None


@dataclass(frozen=True)
class Reply:
    """One answer: text, tool calls and the deterministic usage."""

    text: str
    calls: list[OutCall]
    input_tokens: int
    output_tokens: int
    model: str
    msg_id: str


class Rendered(NamedTuple):
    """An HTTP answer ready to send."""

    status: int
    content_type: str
    body: bytes


def output_chars(text: str, calls: list[OutCall]) -> str:
    """The string whose length defines output tokens: text, then each call's name and arguments."""
    return text + "".join(c.name + c.arguments for c in calls)


def sse(events: list[tuple[str | None, dict[str, Any]]]) -> bytes:
    """Encode `(event name, data)` pairs as a text/event-stream body."""
    out: list[str] = []
    for name, data in events:
        if name:
            out.append(f"event: {name}\n")
        out.append(f"data: {json.dumps(data, separators=(',', ':'))}\n\n")
    return "".join(out).encode()


def json_body(status: int, data: dict[str, Any]) -> Rendered:
    """A JSON answer."""
    return Rendered(status, "application/json", json.dumps(data).encode())


def text_of(content: Any) -> str:
    """Flatten message content (a string or a list of typed parts) to its text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for part in content:
            if isinstance(part, dict):
                for key in ("text", "content"):
                    if isinstance(part.get(key), str | list):
                        parts.append(text_of(part[key]))
                        break
            elif isinstance(part, str):
                parts.append(part)
        return "\n".join(parts)
    return ""


_CWD_PATTERNS = (
    re.compile(r"<cwd>([^<]+)</cwd>"),
    re.compile(r"Primary working directory: (/[^\s\\\"]+)"),
    re.compile(r"Working directory: (/[^\s\\\"]+)"),
)


def find_cwd(raw: str) -> str | None:
    """The working directory an agent states in its request, if any."""
    for pattern in _CWD_PATTERNS:
        match = pattern.search(raw)
        if match:
            return match.group(1).strip()
    return None
