"""OpenAI Responses API (`POST /v1/responses`), streamed (SSE) or not."""

from __future__ import annotations

from typing import Any

from harness.modelserver.openai_chat import CREATED
from harness.modelserver.openai_chat import error as error  # same error shape
from harness.modelserver.wire import Rendered, Reply, RequestView, json_body, sse, text_of

_OUTPUT_TYPES = {
    "function_call",
    "reasoning",
    "custom_tool_call",
    "local_shell_call",
    "web_search_call",
    "tool_search_call",
}


def _is_output(item: dict[str, Any]) -> bool:
    if item.get("type") in _OUTPUT_TYPES:
        return True
    return item.get("role") == "assistant"


def parse(body: dict[str, Any]) -> RequestView:
    """Read the parts of a Responses request that drive the script.

    The history step index counts contiguous groups of output items (assistant messages,
    function calls, reasoning), since one model turn may produce several items.
    """
    items = body.get("input")
    items = [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []
    groups, previous = 0, False
    texts: list[str] = []
    for item in items:
        current = _is_output(item)
        groups += current and not previous
        previous = current
        if item.get("role") == "assistant":
            texts.append(text_of(item.get("content")))
    system = str(body.get("instructions") or "")
    system += "\n".join(text_of(i.get("content")) for i in items if i.get("role") in ("system", "developer"))
    return RequestView(
        stream=bool(body.get("stream")),
        has_tools=bool(body.get("tools")),
        system_text=system,
        assistant_turns=groups,
        assistant_texts=texts,
        model=str(body.get("model", "")),
    )


def _items(reply: Reply) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if reply.text or not reply.calls:
        items.append(
            {
                "type": "message",
                "id": f"msg_{reply.msg_id}",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
            }
        )
    for call in reply.calls:
        item = {
            "type": "function_call",
            "id": f"fc_{call.call_id}",
            "status": "completed",
            "call_id": call.call_id,
            "name": call.name,
            "arguments": call.arguments,
        }
        if call.namespace:
            item["namespace"] = call.namespace
        items.append(item)
    return items


def _response(reply: Reply, status: str, output: list[dict[str, Any]]) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": f"resp_{reply.msg_id}",
        "object": "response",
        "created_at": CREATED,
        "status": status,
        "model": reply.model,
        "output": output,
        "error": None,
        "incomplete_details": None,
        "usage": None,
    }
    if status == "completed":
        body["usage"] = {
            "input_tokens": reply.input_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": reply.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": reply.input_tokens + reply.output_tokens,
        }
    return body


def render(reply: Reply, view: RequestView) -> Rendered:
    """The answer to a request: the full OpenAI event sequence when streamed."""
    items = _items(reply)
    if not view.stream:
        return json_body(200, _response(reply, "completed", items))
    seq = 0
    events: list[tuple[str | None, dict[str, Any]]] = []

    def emit(kind: str, **data: Any) -> None:
        nonlocal seq
        events.append((kind, {"type": kind, "sequence_number": seq, **data}))
        seq += 1

    emit("response.created", response=_response(reply, "in_progress", []))
    emit("response.in_progress", response=_response(reply, "in_progress", []))
    for index, item in enumerate(items):
        if item["type"] == "message":
            text = item["content"][0]["text"]
            emit(
                "response.output_item.added",
                output_index=index,
                item={**item, "content": [], "status": "in_progress"},
            )
            part = {"type": "output_text", "text": "", "annotations": []}
            ref = {"item_id": item["id"], "output_index": index, "content_index": 0}
            emit("response.content_part.added", **ref, part=part)
            emit("response.output_text.delta", **ref, delta=text, logprobs=[])
            emit("response.output_text.done", **ref, text=text, logprobs=[])
            emit("response.content_part.done", **ref, part={**part, "text": text})
        else:
            emit(
                "response.output_item.added",
                output_index=index,
                item={**item, "arguments": "", "status": "in_progress"},
            )
            ref = {"item_id": item["id"], "output_index": index}
            emit("response.function_call_arguments.delta", **ref, delta=item["arguments"])
            emit("response.function_call_arguments.done", **ref, arguments=item["arguments"])
        emit("response.output_item.done", output_index=index, item=item)
    emit("response.completed", response=_response(reply, "completed", items))
    return Rendered(200, "text/event-stream", sse(events))
