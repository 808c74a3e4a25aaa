"""Gemini API (`POST /v1beta/models/<model>:generateContent` and `:streamGenerateContent`).

A fourth protocol beside the three the notes verified, for Gemini CLI (GOOGLE_GEMINI_BASE_URL).
"""

from __future__ import annotations

import json
from typing import Any

from harness.modelserver.wire import Rendered, Reply, RequestView, json_body, sse


def _texts(parts: Any) -> str:
    return "\n".join(str(p.get("text", "")) for p in parts or [] if isinstance(p, dict) and "text" in p)


def parse(body: dict[str, Any], *, stream: bool = False) -> RequestView:
    """Read the parts of a generateContent request that drive the script."""
    contents = [c for c in body.get("contents", []) if isinstance(c, dict)]
    model_turns = [c for c in contents if c.get("role") == "model"]
    system = body.get("systemInstruction") or body.get("system_instruction") or {}
    tools = body.get("tools") or []
    has_tools = any(
        isinstance(t, dict) and (t.get("functionDeclarations") or t.get("function_declarations"))
        for t in tools
    )
    return RequestView(
        stream=stream,
        has_tools=has_tools,
        system_text=_texts(system.get("parts")) if isinstance(system, dict) else str(system),
        assistant_turns=len(model_turns),
        assistant_texts=[_texts(c.get("parts")) for c in model_turns],
        model=str(body.get("model", "")),
    )


def _response(reply: Reply) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    if reply.text or not reply.calls:
        parts.append({"text": reply.text})
    for call in reply.calls:
        parts.append(
            {
                "functionCall": {
                    "name": call.name,
                    "args": json.loads(call.arguments or "{}"),
                    "id": call.call_id,
                }
            }
        )
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {
            "promptTokenCount": reply.input_tokens,
            "candidatesTokenCount": reply.output_tokens,
            "totalTokenCount": reply.input_tokens + reply.output_tokens,
        },
        "modelVersion": reply.model,
        "responseId": reply.msg_id,
    }


def render(reply: Reply, view: RequestView) -> Rendered:
    """One answer; as a single SSE event when streamed."""
    if not view.stream:
        return json_body(200, _response(reply))
    return Rendered(200, "text/event-stream", sse([(None, _response(reply))]))


_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    529: "UNAVAILABLE",
}


def error(status: int, kind: str, message: str) -> Rendered:
    """A Google-shaped error body."""
    return json_body(
        status, {"error": {"code": status, "message": message, "status": _STATUS.get(status, kind.upper())}}
    )
