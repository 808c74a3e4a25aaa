"""Step selection, side requests, errors, delays, the log and the command line."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.modelserver import ScriptedModelServer, read_log
from tests.modelserver.helpers import post, sse_events

FN = {"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}
Serve = Callable[[dict[str, Any]], ScriptedModelServer]


def chat(server: ScriptedModelServer, messages: list[dict[str, Any]], **extra: Any) -> tuple[int, Any]:
    status, raw = post(
        server.url + "/v1/chat/completions", {"model": "m", "messages": messages, "tools": [FN], **extra}
    )
    return status, json.loads(raw)


def content(answer: Any) -> str:
    return str(answer["choices"][0]["message"]["content"])


USER = {"role": "user", "content": "task"}


def test_side_requests_do_not_consume_steps(serve: Serve) -> None:
    server = serve(
        {
            "side_text": "feat: commit",
            "side_if_system_contains": ["Git commit messages"],
            "steps": [{"text": "first"}, {"text": "second"}],
        }
    )
    _, raw = post(server.url + "/v1/messages", {"messages": [USER], "max_tokens": 5})
    assert json.loads(raw)["content"][0]["text"] == "feat: commit"
    _, answer = chat(server, [{"role": "system", "content": "You write Git commit messages."}, USER])
    assert content(answer) == "feat: commit"
    assert content(chat(server, [USER])[1]) == "first"
    kinds = [(r.kind, r.step) for r in server.records()]
    assert kinds == [("side", None), ("side", None), ("main", 0)]


def test_error_status_shapes_and_times(serve: Serve) -> None:
    server = serve(
        {
            "steps": [
                {
                    "text": "recovered",
                    "error": {
                        "status": 529,
                        "type": "overloaded_error",
                        "message": "Overloaded",
                        "times": 2,
                        "retry_after": 0,
                    },
                }
            ]
        }
    )
    tool = {"name": "Bash", "input_schema": {}}
    body = {"messages": [USER], "tools": [tool], "max_tokens": 5, "stream": True}
    for _ in range(2):
        status, raw = post(server.url + "/v1/messages", body)
        assert status == 529
        assert json.loads(raw) == {
            "type": "error",
            "error": {"type": "overloaded_error", "message": "Overloaded"},
        }
    status, raw = post(server.url + "/v1/messages", body)
    assert status == 200
    assert any(e.get("delta", {}).get("text") == "recovered" for e in sse_events(raw))
    records = server.records()
    assert [(r.kind, r.status, r.input_tokens) for r in records][:2] == [("error", 529, 0)] * 2
    server.reset()
    assert post(server.url + "/v1/messages", body)[0] == 529


def test_permanent_500_in_openai_shape(serve: Serve) -> None:
    server = serve({"steps": [{"error": {"status": 500, "message": "boom"}}]})
    status, answer = chat(server, [USER])
    assert status == 500
    assert answer["error"]["message"] == "boom"
    assert chat(server, [USER])[0] == 500


def test_exhausted_script_ends_without_tools(serve: Serve) -> None:
    server = serve({"exhausted_text": "nothing left", "steps": []})
    status, answer = chat(server, [USER])
    assert (status, content(answer)) == (200, "nothing left")
    assert "tool_calls" not in answer["choices"][0]["message"]
    assert server.records()[0].kind == "exhausted"


def test_echo_mode_ignores_padding_turns(serve: Serve) -> None:
    steps = [{"text": "app.py\n<<<<<<< SEARCH first edit"}, {"text": "second reply text"}]
    server = serve({"step_mode": "echo", "tools_required": False, "steps": steps})
    padding = [
        {"role": "user", "content": "example"},
        {"role": "assistant", "content": "Ok."},
        {"role": "user", "content": "files"},
        {"role": "assistant", "content": "Ok."},
    ]
    assert content(chat(server, [*padding, USER])[1]) == steps[0]["text"]
    echoed = {"role": "assistant", "content": steps[0]["text"] + "\nmore"}
    history = [*padding, USER, echoed, {"role": "user", "content": "fix it"}]
    assert content(chat(server, history)[1]) == "second reply text"


def test_counter_mode_and_reset(serve: Serve) -> None:
    server = serve({"step_mode": "counter", "steps": [{"text": "one"}, {"text": "two"}]})
    assert [content(chat(server, [USER])[1]) for _ in range(3)] == ["one", "two", "Script finished."]
    urllib.request.urlopen(server.url + "/_scripted/reset", timeout=5).read()
    assert content(chat(server, [USER])[1]) == "one"


def test_delay_and_cwd_substitution(serve: Serve) -> None:
    server = serve(
        {
            "steps": [
                {
                    "delay": 0.3,
                    "text": "in {{cwd}}",
                    "tool_calls": [{"name": "Write", "arguments": {"file_path": "{{cwd}}/hello.txt"}}],
                }
            ]
        }
    )
    begin = time.monotonic()
    _, answer = chat(server, [{"role": "system", "content": "<cwd>/work/space</cwd>"}, USER])
    assert time.monotonic() - begin >= 0.3
    assert content(answer) == "in /work/space"
    call = answer["choices"][0]["message"]["tool_calls"][0]
    assert json.loads(call["function"]["arguments"]) == {"file_path": "/work/space/hello.txt"}


def test_usage_is_deterministic_and_logged(serve: Serve, tmp_path: Path) -> None:
    server = serve({"steps": [{"text": "same answer"}]})
    first, second = chat(server, [USER])[1], chat(server, [USER])[1]
    assert first["usage"] == second["usage"]
    logged = read_log(tmp_path / "log.jsonl")
    assert [r.model_dump() for r in logged] == [r.model_dump() for r in server.records()]
    assert sum(r.input_tokens for r in logged) == 2 * first["usage"]["prompt_tokens"]


def test_head_and_unknown_routes(serve: Serve) -> None:
    server = serve({"steps": []})
    request = urllib.request.Request(server.url + "/", method="HEAD")
    assert urllib.request.urlopen(request, timeout=5).status == 200
    assert post(server.url + "/v2/nothing", {})[0] == 404
    models = json.loads(urllib.request.urlopen(server.url + "/v1/models", timeout=5).read())
    assert models["data"][0]["id"] == "scripted-model"


def test_command_line_prints_url_and_stops_on_sigterm(tmp_path: Path) -> None:
    script = tmp_path / "s.yaml"
    script.write_text("tools_required: false\nsteps:\n  - text: from the cli\n")
    url_file, log = tmp_path / "url", tmp_path / "cli.jsonl"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "harness.modelserver",
            "--script",
            str(script),
            "--port",
            "0",
            "--log",
            str(log),
            "--url-file",
            str(url_file),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        assert url_file.read_text().strip() == url
        _, raw = post(url + "/v1/chat/completions", {"messages": [USER]})
        assert json.loads(raw)["choices"][0]["message"]["content"] == "from the cli"
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0
        assert proc.stdout is not None
        proc.stdout.close()
    assert read_log(log)[0].kind == "main"


def test_command_line_rejects_a_bad_script(tmp_path: Path) -> None:
    script = tmp_path / "bad.yaml"
    script.write_text("steps:\n  - txt: typo\n")
    done = subprocess.run(
        [sys.executable, "-m", "harness.modelserver", "--script", str(script)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2
    assert "txt" in done.stderr
