"""The HTTP server: routing, step selection, side requests, errors, delays and the request log."""

from __future__ import annotations

import gzip
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from harness.modelserver import anthropic, gemini, openai_chat, openai_responses
from harness.modelserver.script import Script, echo_index, substitute
from harness.modelserver.wire import OutCall, Rendered, Reply, RequestView, find_cwd, json_body, output_chars

Protocol = Literal["anthropic", "chat", "responses", "gemini", "other"]
_ROUTES: dict[str, tuple[Protocol, ModuleType]] = {
    "/v1/messages": ("anthropic", anthropic),
    "/v1/chat/completions": ("chat", openai_chat),
    "/chat/completions": ("chat", openai_chat),
    "/v1/responses": ("responses", openai_responses),
    "/responses": ("responses", openai_responses),
}


class LogRecord(BaseModel):
    """One request the server answered (a line of the JSONL log)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    t: float
    """Epoch seconds when the answer was sent."""
    seq: int
    """Request number in this server process, from 0."""
    method: str
    """HTTP method."""
    path: str
    """Request path with its query string."""
    protocol: Protocol
    """Wire protocol the path selects."""
    kind: Literal["main", "side", "error", "exhausted", "other"]
    """A scripted step, a side request, a scripted error, past the end of the script, or no model call."""
    step: int | None
    """Index of the step played (main, error), else None."""
    stream: bool
    """The answer was SSE."""
    status: int
    """HTTP status sent."""
    input_tokens: int
    """Input tokens reported: len(request body) // 4; 0 for errors."""
    output_tokens: int
    """Output tokens reported: len(text + tool names + argument JSON) // 4; 0 for errors."""
    model: str
    """Model id the client asked for."""
    tool_calls: list[str]
    """Names of the tool calls sent."""
    user_agent: str
    """The client's User-Agent header."""
    body: str | None = None
    """The request body, only when the server logs bodies (`--log-bodies`)."""


class _State:
    def __init__(self, script: Script, log_path: Path | None, log_bodies: bool = False) -> None:
        self.script = script
        self.log_path = log_path
        self.log_bodies = log_bodies
        self.lock = threading.Lock()
        self.seq = 0
        self.counter = 0
        self.errors_served: dict[int, int] = {}
        self.records: list[LogRecord] = []

    def reset(self) -> None:
        with self.lock:
            self.counter = 0
            self.errors_served.clear()

    def log(self, **fields: Any) -> None:
        record = LogRecord(t=time.time(), **fields)
        with self.lock:
            self.records.append(record)
            if self.log_path is not None:
                with self.log_path.open("a", encoding="utf-8") as fh:
                    fh.write(record.model_dump_json() + "\n")

    def next_seq(self) -> int:
        with self.lock:
            self.seq += 1
            return self.seq - 1


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the JSONL log is the record
        pass

    def _send(self, rendered: Rendered, headers: dict[str, str] | None = None) -> None:
        self.send_response(rendered.status)
        self.send_header("Content-Type", rendered.content_type)
        self.send_header("Content-Length", str(len(rendered.body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(rendered.body)

    def _other(self, status: int, data: dict[str, Any]) -> None:
        state = self.server.state
        state.log(
            seq=state.next_seq(),
            method=self.command,
            path=self.path,
            protocol="other",
            kind="other",
            step=None,
            stream=False,
            status=status,
            input_tokens=0,
            output_tokens=0,
            model="",
            tool_calls=[],
            user_agent=self.headers.get("User-Agent", ""),
        )
        self._send(json_body(status, data))

    def do_HEAD(self) -> None:
        self._other(200, {})

    def do_GET(self) -> None:
        state = self.server.state
        path = self.path.split("?")[0].rstrip("/")
        if path == "/_scripted/reset":
            state.reset()
            self._send(json_body(200, {"reset": True}))
        elif path == "/_scripted/log":
            self._send(json_body(200, {"records": [r.model_dump() for r in state.records]}))
        elif path in ("/v1/models", "/models"):
            model = state.script.model
            self._other(
                200,
                {
                    "object": "list",
                    "data": [
                        {
                            "id": model,
                            "object": "model",
                            "type": "model",
                            "display_name": model,
                            "created": 0,
                            "owned_by": "scripted",
                            "context_window": state.script.context_limit,
                        }
                    ],
                },
            )
        else:
            self._other(404, {"error": {"message": f"no route {path}", "type": "not_found"}})

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().strip().split(b";")[0], 16)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
                if size == 0:
                    break
            raw = b"".join(chunks)
        else:
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.headers.get("Content-Encoding", "").lower() == "gzip":
            raw = gzip.decompress(raw)
        return raw

    def do_POST(self) -> None:
        raw = self._read_body()
        path = self.path.split("?")[0].rstrip("/")
        if path.endswith("/count_tokens"):
            self._other(200, {"input_tokens": len(raw) // 4})
            return
        if path.endswith(":countTokens"):
            self._other(200, {"totalTokens": len(raw) // 4})
            return
        route = _ROUTES.get(path)
        if path.endswith((":generateContent", ":streamGenerateContent")):
            route = ("gemini", gemini)
        if route is None:
            self._other(404, {"error": {"message": f"no route {path}", "type": "not_found"}})
            return
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._other(400, {"error": {"message": "body is not JSON", "type": "invalid_request"}})
            return
        self._answer(route[0], route[1], body, raw)

    def _answer(self, protocol: Protocol, wire: ModuleType, body: dict[str, Any], raw: bytes) -> None:
        state, script = self.server.state, self.server.state.script
        view: RequestView
        if wire is gemini:
            view = gemini.parse(body, stream=self.path.split("?")[0].endswith(":streamGenerateContent"))
        else:
            view = wire.parse(body)
        seq = state.next_seq()
        common = {
            "seq": seq,
            "method": "POST",
            "path": self.path,
            "protocol": protocol,
            "stream": view.stream,
            "model": view.model,
            "user_agent": self.headers.get("User-Agent", ""),
            "body": raw.decode("utf-8", "replace") if state.log_bodies else None,
        }
        side = (script.tools_required and not view.has_tools) or any(
            marker in view.system_text for marker in script.side_if_system_contains
        )
        kind: Literal["main", "side", "exhausted"] = "side"
        index: int | None = None
        text, calls = script.side_text, []
        if not side:
            with state.lock:
                index = {
                    "history": view.assistant_turns,
                    "counter": state.counter,
                    "echo": echo_index(script, view.assistant_texts),
                }[script.step_mode]
            if index >= len(script.steps):
                kind, text = "exhausted", script.exhausted_text
            else:
                step, kind = script.steps[index], "main"
                time.sleep(step.delay)
                if step.error is not None and self._serve_error(index, step.error.times):
                    headers = {}
                    if step.error.retry_after is not None:
                        headers["retry-after"] = str(step.error.retry_after)
                    state.log(
                        **common,
                        kind="error",
                        step=index,
                        status=step.error.status,
                        input_tokens=0,
                        output_tokens=0,
                        tool_calls=[],
                    )
                    self._send(wire.error(step.error.status, step.error.type, step.error.message), headers)
                    return
                cwd = find_cwd(raw.decode("utf-8", "replace"))
                text = substitute(step.text, cwd)
                prefix = "toolu" if protocol == "anthropic" else "call"
                calls = [
                    OutCall(
                        f"{prefix}_s{index}_{i}",
                        c.name,
                        c.arguments
                        if isinstance(c.arguments, str)
                        else json.dumps(substitute(c.arguments, cwd)),
                        c.namespace,
                    )
                    for i, c in enumerate(step.tool_calls)
                ]
            if script.step_mode == "counter":
                with state.lock:
                    state.counter += 1
        reply = Reply(
            text=text,
            calls=calls,
            input_tokens=len(raw) // 4,
            output_tokens=len(output_chars(text, calls)) // 4,
            model=script.model,
            msg_id=f"msg_{seq:05d}",
        )
        rendered = wire.render(reply, view)
        # logged before sending, so a client that has its answer always finds it in the log
        state.log(
            **common,
            kind=kind,
            step=index,
            status=200,
            input_tokens=reply.input_tokens,
            output_tokens=reply.output_tokens,
            tool_calls=[c.name for c in calls],
        )
        self._send(rendered)

    def _serve_error(self, index: int, times: int | None) -> bool:
        state = self.server.state
        with state.lock:
            served = state.errors_served.get(index, 0)
            if times is not None and served >= times:
                return False
            state.errors_served[index] = served + 1
            return True


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], state: _State) -> None:
        super().__init__(address, _Handler)
        self.state = state
