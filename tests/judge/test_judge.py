"""The LLM judge against the scripted model server (both protocols), and its config checks."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.grade.judge_client import JudgeConfigError, JudgeError, make_judge, parse_verdict
from harness.modelserver import Script, ScriptedModelServer, read_log

PASS = '{"passed": true, "reason": "hello.txt was created as asked."}'
FAIL = 'Looking at it.\n{"passed": false, "reason": "The tests were never run."}'


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ScriptedModelServer]:
    script = Script.model_validate(
        {
            "step_mode": "counter",
            "tools_required": False,
            "steps": [
                {"text": PASS},
                {"text": FAIL},
                {"text": "I am not sure."},
                {"error": {"status": 500, "message": "boom"}},
            ],
        }
    )
    with ScriptedModelServer(script, log_path=tmp_path / "judge.jsonl") as running:
        yield running


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_verdicts_over_both_protocols(server: ScriptedModelServer, provider: str, tmp_path: Path) -> None:
    judge = make_judge(
        {
            "provider": provider,
            "model": "judge-model",
            "base_url": server.url,
            "api_key": "sk-local",
            "retries": 0,
        }
    )
    first = judge.judge("hello.txt must exist", "assistant: created hello.txt")
    assert (first.passed, first.reason) == (True, "hello.txt was created as asked.")
    assert first.raw == PASS
    (record,) = read_log(tmp_path / "judge.jsonl")
    assert record.protocol == ("anthropic" if provider == "anthropic" else "chat")
    assert (first.input_tokens, first.output_tokens) == (record.input_tokens, record.output_tokens)
    second = judge.judge("tests must be run", "assistant: done")
    assert (second.passed, second.reason) == (False, "The tests were never run.")
    with pytest.raises(JudgeError, match="unreadable verdict"):
        judge.judge("r", "t")
    with pytest.raises(JudgeError, match="HTTP 500"):
        judge.judge("r", "t")


def test_rubric_and_transcript_reach_the_model(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []
    script = Script.model_validate({"tools_required": False, "steps": [{"text": PASS}]})
    with ScriptedModelServer(script) as running:
        judge = make_judge(
            {"provider": "openai", "model": "m", "base_url": running.url + "/v1", "api_key": "k"}
        )
        judge.judge("RUBRIC-TEXT", "TRANSCRIPT-TEXT")
        seen = [r.model_dump() for r in running.records()]
    assert seen[0]["path"] == "/v1/chat/completions"
    assert seen[0]["input_tokens"] > len("RUBRIC-TEXTTRANSCRIPT-TEXT") // 4


def test_retries_then_succeeds(tmp_path: Path) -> None:
    script = Script.model_validate(
        {
            "tools_required": False,
            "steps": [{"text": PASS, "error": {"status": 529, "type": "overloaded_error", "times": 1}}],
        }
    )
    with ScriptedModelServer(script) as running:
        judge = make_judge(
            {"provider": "anthropic", "model": "m", "base_url": running.url, "api_key": "k", "retries": 1}
        )
        assert judge.judge("r", "t").passed
        assert [r.status for r in running.records()] == [529, 200]


def test_misconfiguration_fails_at_construction(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ASSAY_TEST_JUDGE_KEY", raising=False)
    local = "http://127.0.0.1:9"
    with pytest.raises(JudgeConfigError, match="judge needs base_url"):
        make_judge({"provider": "anthropic", "model": "m", "api_key": "k"})  # no provider address built in
    with pytest.raises(JudgeConfigError, match="ASSAY_TEST_JUDGE_KEY is not set"):
        make_judge(
            {"provider": "anthropic", "model": "m", "base_url": local, "api_key_env": "ASSAY_TEST_JUDGE_KEY"}
        )
    with pytest.raises(JudgeConfigError, match="not an http"):
        make_judge({"provider": "openai", "model": "m", "base_url": "localhost:8080", "api_key": "k"})
    with pytest.raises(JudgeConfigError, match="api_key_env"):
        make_judge({"provider": "openai", "model": "m", "base_url": local})
    with pytest.raises(JudgeConfigError, match="provider"):
        make_judge({"provider": "gemini", "model": "m", "api_key": "k"})
    monkeypatch.setenv("ASSAY_TEST_JUDGE_KEY", "secret")
    make_judge(
        {"provider": "anthropic", "model": "m", "base_url": local, "api_key_env": "ASSAY_TEST_JUDGE_KEY"}
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"passed": true, "reason": "ok"}', (True, "ok")),
        ('```json\n{"passed": false, "reason": "no"}\n```', (False, "no")),
        ("PASS: all good", (True, "all good")),
        ("**FAIL** - missing file", (False, "missing file")),
    ],
)
def test_parse_verdict(text: str, expected: tuple[bool, str]) -> None:
    assert parse_verdict(text) == expected


def test_connection_refused_is_a_judge_error() -> None:
    judge = make_judge(
        {
            "provider": "openai",
            "model": "m",
            "base_url": "http://127.0.0.1:9",
            "api_key": "k",
            "retries": 0,
            "timeout_s": 2,
        }
    )
    with pytest.raises(JudgeError, match="connection failed"):
        judge.judge("r", json.dumps({"t": 1}))
