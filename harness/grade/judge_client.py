"""LLM judge client for `judge` checks: a rubric and a transcript in, a verdict out.

Two wire protocols, stdlib HTTP only: Anthropic Messages and OpenAI-compatible Chat
Completions. A judge is built from a `JudgeConfig`; building validates it (provider, base URL,
the API key variable being set), so a misconfigured judge fails before any trial runs:
`check_judge_config` builds every judge a project names on the first run of a matrix and
raises, listing them all. At grade time a judge that errors only makes its own check
`unavailable`, never a pass, and the rest of the grade stands. Off by default.

    judge = make_judge(JudgeConfig(provider="anthropic", model="claude-x", api_key_env="KEY"))
    verdict = judge.judge(rubric, transcript_text)   # JudgeVerdict(passed, reason, raw)
"""

from __future__ import annotations

import json
import os
import re
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any, Literal, Protocol
from urllib.parse import urlparse

from pydantic import BaseModel, ConfigDict, Field

SYSTEM = (
    "You grade the work of an AI coding agent against a rubric, using its transcript. "
    'Answer with only a JSON object: {"passed": true or false, "reason": "<one or two sentences>"}.'
)
_RETRY_STATUSES = {408, 429, 500, 502, 503, 504, 529}


class JudgeConfigError(ValueError):
    """The judge's provider configuration is unusable."""


class JudgeError(RuntimeError):
    """The judge could not give a verdict (provider error or an unreadable answer)."""


class JudgeConfig(BaseModel):
    """A judge provider (an entry of the project's `judges:`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    provider: Literal["anthropic", "openai"]
    """Wire protocol: Anthropic Messages or OpenAI-compatible Chat Completions."""
    model: str
    """Model id sent to the provider."""
    base_url: str | None = None
    """Endpoint base URL; required (assay names no provider address of its own)."""
    api_key_env: str | None = None
    """Environment variable holding the API key (required unless api_key is given)."""
    api_key: str | None = None
    """A literal key, for local scripted servers only."""
    max_tokens: int = 512
    """Answer length limit."""
    timeout_s: float = 60.0
    """Per-request timeout."""
    retries: int = 2
    """Retries on 408/429/5xx/529 and connection errors."""
    extra_headers: dict[str, str] = Field(default_factory=dict)
    """Extra HTTP headers."""


class JudgeVerdict(BaseModel):
    """A judge's answer."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    passed: bool
    """Whether the rubric is met."""
    reason: str
    """The judge's reason."""
    raw: str
    """The model's answer text as received."""
    model: str = ""
    """Model that judged."""
    input_tokens: int = 0
    """Input tokens the provider reported."""
    output_tokens: int = 0
    """Output tokens the provider reported."""


class Judge(Protocol):
    """Something that grades a transcript against a rubric."""

    def judge(self, rubric: str, transcript_text: str) -> JudgeVerdict:
        """Return the verdict; raise JudgeError when there is none."""
        ...


def parse_verdict(text: str) -> tuple[bool, str]:
    """(passed, reason) from the answer: the last JSON object with `passed`, else a leading
    PASS/FAIL word."""
    for match in reversed(list(re.finditer(r"\{.*?\}", text, re.S))):
        try:
            obj = json.loads(match.group(0))
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("passed"), bool):
            return obj["passed"], str(obj.get("reason", ""))
    word = re.match(r"[\s*]*(PASS(?:ED)?|FAIL(?:ED)?)\b[\s*:.-]*(.*)", text, re.I | re.S)
    if word:
        return word.group(1).upper().startswith("PASS"), word.group(2).strip()
    raise JudgeError(f"unreadable verdict: {text[:200]!r}")


class HttpJudge:
    """A judge over HTTP; `make_judge` picks the protocol."""

    def __init__(self, config: JudgeConfig) -> None:
        if not config.base_url:
            raise JudgeConfigError(
                "judge needs base_url (its provider's endpoint: assay names no address off this machine)"
            )
        base = config.base_url.rstrip("/")
        parsed = urlparse(base)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise JudgeConfigError(f"judge base_url {base!r} is not an http(s) URL with a host")
        if config.api_key_env:
            key = os.environ.get(config.api_key_env, "")
            if not key:
                raise JudgeConfigError(f"judge API key variable {config.api_key_env} is not set")
        elif config.api_key:
            key = config.api_key
        else:
            raise JudgeConfigError("judge needs api_key_env (the variable holding its API key)")
        self.config, self.base, self.key = config, base, key

    def _request(self) -> tuple[str, dict[str, str]]:
        headers = {"Content-Type": "application/json", **self.config.extra_headers}
        if self.config.provider == "anthropic":
            headers.update({"x-api-key": self.key, "anthropic-version": "2023-06-01"})
            path = "/messages" if self.base.endswith("/v1") else "/v1/messages"
        else:
            headers["Authorization"] = f"Bearer {self.key}"
            path = "/chat/completions" if self.base.endswith("/v1") else "/v1/chat/completions"
        return self.base + path, headers

    def _body(self, rubric: str, transcript_text: str) -> dict[str, Any]:
        user = f"Rubric:\n{rubric}\n\nTranscript:\n{transcript_text}"
        if self.config.provider == "anthropic":
            return {
                "model": self.config.model,
                "max_tokens": self.config.max_tokens,
                "system": SYSTEM,
                "messages": [{"role": "user", "content": user}],
            }
        return {
            "model": self.config.model,
            "max_tokens": self.config.max_tokens,
            "temperature": 0,
            "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}],
        }

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        url, headers = self._request()
        data = json.dumps(body).encode()
        last = ""
        for attempt in range(self.config.retries + 1):
            if attempt:
                time.sleep(min(0.5 * 2 ** (attempt - 1), 8))
            request = urllib.request.Request(url, data=data, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self.config.timeout_s) as response:
                    answer: dict[str, Any] = json.loads(response.read())
                    return answer
            except urllib.error.HTTPError as exc:
                last = f"HTTP {exc.code}: {exc.read()[:300].decode('utf-8', 'replace')}"
                if exc.code not in _RETRY_STATUSES:
                    break
            except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
                last = f"connection failed: {exc}"
            except json.JSONDecodeError as exc:
                raise JudgeError(f"judge answer is not JSON: {exc}") from exc
        raise JudgeError(f"judge request to {url} failed: {last}")

    def judge(self, rubric: str, transcript_text: str) -> JudgeVerdict:
        """Ask the model; parse its verdict."""
        answer = self._post(self._body(rubric, transcript_text))
        usage = answer.get("usage") or {}
        if self.config.provider == "anthropic":
            text = "".join(b.get("text", "") for b in answer.get("content", []) if isinstance(b, dict))
            tokens = (usage.get("input_tokens", 0), usage.get("output_tokens", 0))
        else:
            choices = answer.get("choices") or [{}]
            text = str((choices[0].get("message") or {}).get("content") or "")
            tokens = (usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0))
        passed, reason = parse_verdict(text)
        return JudgeVerdict(
            passed=passed,
            reason=reason,
            raw=text,
            model=str(answer.get("model") or self.config.model),
            input_tokens=int(tokens[0] or 0),
            output_tokens=int(tokens[1] or 0),
        )


def make_judge(config: JudgeConfig | dict[str, Any]) -> Judge:
    """A judge for the config; raises JudgeConfigError when it cannot work."""
    try:
        resolved = config if isinstance(config, JudgeConfig) else JudgeConfig.model_validate(config)
    except ValueError as exc:
        raise JudgeConfigError(f"judge config: {exc}") from exc
    return HttpJudge(resolved)


def check_judge_config(judges: Mapping[str, JudgeConfig | Mapping[str, Any]]) -> dict[str, Judge]:
    """Build every named judge; raise JudgeConfigError naming each one that cannot work.

    Args:
        judges: Judge name -> provider configuration (the project's `judges:`); a check
            names its judge with `model:` (default `default`).

    Returns:
        Name -> judge, to pass as `grade_run(..., judge=...)`.
    """
    built: dict[str, Judge] = {}
    problems: list[str] = []
    for name, config in sorted(judges.items()):
        try:
            built[name] = make_judge(config if isinstance(config, JudgeConfig) else dict(config))
        except JudgeConfigError as exc:
            problems.append(f"{name}: {exc}")
    if problems:
        raise JudgeConfigError("misconfigured judge(s): " + "; ".join(problems))
    return built
