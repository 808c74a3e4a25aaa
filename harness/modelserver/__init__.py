"""A scripted model server: replays YAML scripts over the Anthropic Messages, OpenAI Chat
Completions and OpenAI Responses protocols, on 127.0.0.1, with deterministic usage.

Test infrastructure for driving real agent CLIs offline, and a way for users to try a suite
without spending tokens. See `docs/agents.md` for the script format.

    with ScriptedModelServer(load_script(path), log_path=log) as server:
        run_agent(base_url=server.url)
    records = server.records()
"""

from __future__ import annotations

import threading
from pathlib import Path
from types import TracebackType

from harness.modelserver.script import ErrorSpec, Script, Step, ToolCall, load_script
from harness.modelserver.server import LogRecord, _Server, _State

__all__ = [
    "ErrorSpec",
    "LogRecord",
    "Script",
    "ScriptedModelServer",
    "Step",
    "ToolCall",
    "load_script",
    "read_log",
]


class ScriptedModelServer:
    """The server running in a background thread of this process."""

    def __init__(
        self,
        script: Script,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        log_path: Path | None = None,
        log_bodies: bool = False,
    ) -> None:
        self._state = _State(script, log_path, log_bodies)
        self._httpd = _Server((host, port), self._state)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """Base URL without a trailing slash, e.g. `http://127.0.0.1:40123`."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> str:
        """Start serving; returns the base URL."""
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, daemon=True, name="scripted-model-server"
        )
        self._thread.start()
        return self.url

    def serve_forever(self) -> None:
        """Serve in the calling thread until `KeyboardInterrupt`; then close the socket."""
        try:
            self._httpd.serve_forever()
        finally:
            self._httpd.server_close()

    def stop(self) -> None:
        """Stop serving and close the socket."""
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join()
            self._thread = None
        self._httpd.server_close()

    def records(self) -> list[LogRecord]:
        """Every request answered so far."""
        with self._state.lock:
            return list(self._state.records)

    def reset(self) -> None:
        """Reset the `counter` step index and the scripted error counts."""
        self._state.reset()

    def __enter__(self) -> ScriptedModelServer:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def read_log(path: Path) -> list[LogRecord]:
    """Read a JSONL request log written by the server."""
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    return [LogRecord.model_validate_json(line) for line in lines if line.strip()]
