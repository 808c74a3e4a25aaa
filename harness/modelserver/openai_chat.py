"""OpenAI Chat Completions (`POST /v1/chat/completions`), streamed or not."""

from __future__ import annotations

from typing import Any

from harness.modelserver.wire import Rendered, Reply, RequestView, json_body, sse, text_of

CREATED = 1700000000  # fixed so answers are byte-identical between runs


def parse(body: dict[str, Any]) -> RequestView:
    """Read the parts of a Chat Completions request that drive the script."""
    messages = [m for m in body.get("messages", []) if isinstance(m, dict)]
    assistant = [m for m in messages if m.get("role") == "assistant"]
    system = "\n".join(
        text_of(m.get("content")) for m in messages if m.get("role") in ("system", "developer")
    )
    options = body.get("stream_options") or {}
    return RequestView(
        stream=bool(body.get("stream")),
        has_tools=bool(body.get("tools") or body.get("functions")),
        system_text=system,
        assistant_turns=len(assistant),
        assistant_texts=[text_of(m.get("content")) for m in assistant],
        model=str(body.get("model", "")),
        include_usage=bool(options.get("include_usage")),
    )


def _usage(reply: Reply) -> dict[str, Any]:
    return {
        "prompt_tokens": reply.input_tokens,
        "completion_tokens": reply.output_tokens,
        "total_tokens": reply.input_tokens + reply.output_tokens,
        "prompt_tokens_details": {"cached_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }


def _calls(reply: Reply) -> list[dict[str, Any]]:
    return [
        {"id": c.call_id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
        for c in reply.calls
    ]


def render(reply: Reply, view: RequestView) -> Rendered:
    """The answer to a request, as SSE chunks when the client asked for a stream."""
    finish = "tool_calls" if reply.calls else "stop"
    head = {"id": reply.msg_id, "created": CREATED, "model": reply.model}
    if not view.stream:
        message: dict[str, Any] = {"role": "assistant", "content": reply.text}
        if reply.calls:
            message["tool_calls"] = _calls(reply)
        return json_body(
            200,
            {
                **head,
                "object": "chat.completion",
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": _usage(reply),
            },
        )
    chunk = {**head, "object": "chat.completion.chunk"}
    events: list[tuple[str | None, dict[str, Any]]] = [
        (
            None,
            {
                **chunk,
                "choices": [
                    {"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}
                ],
            },
        ),
    ]
    if reply.text:
        events.append(
            (
                None,
                {**chunk, "choices": [{"index": 0, "delta": {"content": reply.text}, "finish_reason": None}]},
            )
        )
    for index, call in enumerate(_calls(reply)):
        events.append(
            (
                None,
                {
                    **chunk,
                    "choices": [
                        {
                            "index": 0,
                            "delta": {"tool_calls": [{"index": index, **call}]},
                            "finish_reason": None,
                        }
                    ],
                },
            )
        )
    events.append((None, {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}))
    if view.include_usage:
        events.append((None, {**chunk, "choices": [], "usage": _usage(reply)}))
    return Rendered(200, "text/event-stream", sse(events) + b"data: [DONE]\n\n")


def error(status: int, kind: str, message: str) -> Rendered:
    """An OpenAI-shaped error body."""
    return json_body(status, {"error": {"message": message, "type": kind, "code": kind, "param": None}})
