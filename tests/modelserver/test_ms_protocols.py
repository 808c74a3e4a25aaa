"""Each protocol, streamed and not, with deterministic usage."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.modelserver import Script, ScriptedModelServer
from tests.modelserver.helpers import post, sse_events

TOOL = {"name": "Bash", "description": "run", "input_schema": {"type": "object"}}
FN = {"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}
SCRIPT = {
    "model": "m1",
    "steps": [
        {"text": "Creating it.", "tool_calls": [{"name": "Bash", "arguments": {"command": "echo hi > a"}}]},
        {"text": "Done."},
    ],
}
Serve = Callable[[dict[str, Any]], ScriptedModelServer]


def anthropic_body(messages: list[dict[str, Any]], *, stream: bool) -> dict[str, Any]:
    return {
        "model": "claude-x",
        "max_tokens": 100,
        "system": "be brief",
        "tools": [TOOL],
        "messages": messages,
        "stream": stream,
    }


def test_anthropic_stream_tool_call_and_usage(serve: Serve) -> None:
    server = serve(SCRIPT)
    body = anthropic_body([{"role": "user", "content": "go"}], stream=True)
    status, raw = post(server.url + "/v1/messages?beta=true", body)
    assert status == 200
    events = sse_events(raw)
    assert next(e["type"] for e in events) == "message_start"
    assert events[-1]["type"] == "message_stop"
    start = next(e for e in events if e["type"] == "content_block_start" and e["index"] == 1)
    assert start["content_block"]["name"] == "Bash"
    partial = next(e for e in events if e["type"] == "content_block_delta" and e["index"] == 1)
    assert json.loads(partial["delta"]["partial_json"]) == {"command": "echo hi > a"}
    delta = next(e for e in events if e["type"] == "message_delta")
    assert delta["delta"]["stop_reason"] == "tool_use"
    expected_in = len(json.dumps(body).encode()) // 4
    expected_out = len("Creating it." + "Bash" + json.dumps({"command": "echo hi > a"})) // 4
    assert events[0]["message"]["usage"]["input_tokens"] == expected_in
    assert delta["usage"]["output_tokens"] == expected_out
    (record,) = server.records()
    assert (record.kind, record.step, record.input_tokens, record.output_tokens) == (
        "main",
        0,
        expected_in,
        expected_out,
    )
    assert record.tool_calls == ["Bash"]


def test_anthropic_non_stream_second_step(serve: Serve) -> None:
    server = serve(SCRIPT)
    history = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "text", "text": "Creating it."}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x", "content": ""}]},
    ]
    status, raw = post(server.url + "/v1/messages", anthropic_body(history, stream=False))
    message = json.loads(raw)
    assert status == 200
    assert message["content"] == [{"type": "text", "text": "Done."}]
    assert message["stop_reason"] == "end_turn"
    assert message["usage"]["output_tokens"] == len("Done.") // 4


def test_chat_non_stream_and_stream(serve: Serve) -> None:
    server = serve(
        {"steps": [{"text": "ok", "tool_calls": [{"name": "bash", "arguments": {"command": "ls"}}]}]}
    )
    body = {"model": "openai/x", "messages": [{"role": "user", "content": "go"}], "tools": [FN]}
    status, raw = post(server.url + "/v1/chat/completions", body)
    choice = json.loads(raw)["choices"][0]
    assert status == 200
    assert choice["finish_reason"] == "tool_calls"
    assert json.loads(choice["message"]["tool_calls"][0]["function"]["arguments"]) == {"command": "ls"}
    assert json.loads(raw)["usage"]["prompt_tokens"] == len(json.dumps(body).encode()) // 4

    body = {**body, "stream": True, "stream_options": {"include_usage": True}}
    status, raw = post(server.url + "/chat/completions", body)
    assert raw.endswith(b"data: [DONE]\n\n")
    chunks = sse_events(raw)
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"]["completion_tokens"] == len("ok" + "bash" + '{"command": "ls"}') // 4
    calls = [
        c for ch in chunks for c in (ch["choices"][0]["delta"].get("tool_calls", []) if ch["choices"] else [])
    ]
    assert calls[0]["function"]["name"] == "bash"


def test_chat_stream_without_include_usage_sends_no_usage(serve: Serve) -> None:
    server = serve({"steps": [{"text": "hello there"}], "tools_required": False})
    status, raw = post(
        server.url + "/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}], "stream": True}
    )
    assert status == 200
    chunks = sse_events(raw)
    assert all("usage" not in c for c in chunks)
    assert "".join(c["choices"][0]["delta"].get("content", "") for c in chunks) == "hello there"


def test_responses_stream_groups_history(serve: Serve) -> None:
    server = serve(
        {
            "steps": [
                {"text": "a", "tool_calls": [{"name": "exec_command", "arguments": {"cmd": "ls"}}]},
                {"text": "b", "tool_calls": [{"name": "exec_command", "arguments": {"cmd": "pwd"}}]},
                {"text": "finished"},
            ]
        }
    )
    first_turn = [
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "a"}]},
        {"type": "function_call", "call_id": "c1", "name": "exec_command", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "x"},
    ]
    body = {
        "model": "m",
        "instructions": "",
        "stream": True,
        "tools": [FN],
        "input": [
            {"type": "message", "role": "developer", "content": "sys"},
            {"type": "message", "role": "user", "content": "go"},
            *first_turn,
        ],
    }
    status, raw = post(server.url + "/v1/responses", body)
    events = sse_events(raw)
    assert status == 200
    assert events[0]["type"] == "response.created"
    done = [e["item"] for e in events if e["type"] == "response.output_item.done"]
    assert done[1]["name"] == "exec_command"
    assert json.loads(done[1]["arguments"]) == {"cmd": "pwd"}
    completed = events[-1]
    assert completed["type"] == "response.completed"
    assert completed["response"]["usage"]["input_tokens"] == len(json.dumps(body).encode()) // 4
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    body["input"] += [{"type": "reasoning", "summary": []}, *first_turn]
    _, raw = post(server.url + "/v1/responses", {**body, "stream": False})
    assert json.loads(raw)["output"][0]["content"][0]["text"] == "finished"


def test_gemini_stream_and_count_tokens(serve: Serve) -> None:
    server = serve(
        {
            "steps": [
                {"text": "a", "tool_calls": [{"name": "run_shell_command", "arguments": {"command": "ls"}}]},
                {"text": "done"},
            ]
        }
    )
    tools = [{"functionDeclarations": [{"name": "run_shell_command"}]}]
    body = {
        "contents": [{"role": "user", "parts": [{"text": "go"}]}],
        "tools": tools,
        "systemInstruction": {"parts": [{"text": "sys"}]},
    }
    status, raw = post(server.url + "/v1beta/models/m:streamGenerateContent?alt=sse", body)
    (event,) = sse_events(raw)
    parts = event["candidates"][0]["content"]["parts"]
    assert status == 200
    assert parts[1]["functionCall"] == {
        "name": "run_shell_command",
        "args": {"command": "ls"},
        "id": "call_s0_0",
    }
    assert event["usageMetadata"]["promptTokenCount"] == len(json.dumps(body).encode()) // 4
    body["contents"] += [
        {"role": "model", "parts": parts},
        {"role": "user", "parts": [{"functionResponse": {"name": "run_shell_command"}}]},
    ]
    _, raw = post(server.url + "/v1beta/models/m:generateContent", body)
    assert json.loads(raw)["candidates"][0]["content"]["parts"] == [{"text": "done"}]
    _, raw = post(server.url + "/v1beta/models/m:countTokens", body)
    assert json.loads(raw)["totalTokens"] == len(json.dumps(body).encode()) // 4
    assert [r.protocol for r in server.records()] == ["gemini", "gemini", "other"]


def test_responses_namespaced_call_and_logged_body(tmp_path: Path) -> None:
    script = Script.model_validate(
        {"steps": [{"tool_calls": [{"name": "lookup", "namespace": "mcp__docs", "arguments": {"q": "x"}}]}]}
    )
    body = {"model": "m", "stream": False, "tools": [FN], "input": [{"role": "user", "content": "go"}]}
    with ScriptedModelServer(script, log_bodies=True) as server:
        _, raw = post(server.url + "/v1/responses", body)
        (record,) = server.records()
    (item,) = json.loads(raw)["output"]
    assert (item["namespace"], item["name"], json.loads(item["arguments"])) == (
        "mcp__docs",
        "lookup",
        {"q": "x"},
    )
    assert json.loads(record.body or "") == body
