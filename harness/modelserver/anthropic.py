"""Anthropic Messages API (`POST /v1/messages`), streamed (SSE) or not."""

from __future__ import annotations

import json
from typing import Any

from harness.modelserver.wire import Rendered, Reply, RequestView, json_body, sse, text_of


def parse(body: dict[str, Any]) -> RequestView:
    """Read the parts of a Messages request that drive the script."""
    messages = [m for m in body.get("messages", []) if isinstance(m, dict)]
    assistant = [m for m in messages if m.get("role") == "assistant"]
    system = text_of(body.get("system", ""))
    # the mid-conversation-system beta puts role=system messages inside `messages`
    system += "\n".join(text_of(m.get("content")) for m in messages if m.get("role") == "system")
    return RequestView(
        stream=bool(body.get("stream")),
        has_tools=bool(body.get("tools")),
        system_text=system,
        assistant_turns=len(assistant),
        assistant_texts=[text_of(m.get("content")) for m in assistant],
        model=str(body.get("model", "")),
    )


def _blocks(reply: Reply) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if reply.text or not reply.calls:
        blocks.append({"type": "text", "text": reply.text})
    for call in reply.calls:
        blocks.append(
            {
                "type": "tool_use",
                "id": call.call_id,
                "name": call.name,
                "input": json.loads(call.arguments or "{}"),
            }
        )
    return blocks


def _usage(reply: Reply, output: int) -> dict[str, int]:
    return {
        "input_tokens": reply.input_tokens,
        "output_tokens": output,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def render(reply: Reply, view: RequestView) -> Rendered:
    """The answer to a request, as SSE when the client asked for a stream."""
    stop = "tool_use" if reply.calls else "end_turn"
    message = {
        "id": reply.msg_id,
        "type": "message",
        "role": "assistant",
        "model": reply.model,
        "stop_reason": stop,
        "stop_sequence": None,
    }
    if not view.stream:
        return json_body(
            200, {**message, "content": _blocks(reply), "usage": _usage(reply, reply.output_tokens)}
        )
    start: dict[str, Any] = {**message, "content": [], "stop_reason": None, "usage": _usage(reply, 1)}
    events: list[tuple[str | None, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": start}),
    ]
    for index, block in enumerate(_blocks(reply)):
        first: dict[str, Any]
        delta: dict[str, Any]
        if block["type"] == "text":
            first = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            first = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events += [
            ("content_block_start", {"type": "content_block_start", "index": index, "content_block": first}),
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": index}),
        ]
    events += [
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": reply.output_tokens},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return Rendered(200, "text/event-stream", sse(events))


def error(status: int, kind: str, message: str) -> Rendered:
    """An Anthropic-shaped error body."""
    return json_body(status, {"type": "error", "error": {"type": kind, "message": message}})
