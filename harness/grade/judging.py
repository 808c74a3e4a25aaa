"""The LLM judge as the grader sees it: a small Protocol, and a configuration check.

The client itself (OpenAI-compatible or Anthropic endpoint) lives in `harness.judge`;
anything with a `judge(request) -> JudgeVerdict` method plugs in. The judge layer is off
by default. A misconfigured provider must fail when a matrix starts (`check_judge_config`,
called by the runner before any trial), while a judge that errors during grading only
makes its own check `unavailable` — never a pass — and the rest of the grade stands.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlparse

PROVIDERS = ("anthropic", "openai")


@dataclass(frozen=True)
class JudgeRequest:
    """One grading question: a rubric applied to a run's transcript."""

    scenario: str
    condition: str
    prompt: str
    rubric: str
    transcript: str


@dataclass(frozen=True)
class JudgeVerdict:
    """The judge's answer; `reason` is recorded verbatim in the check's message."""

    passed: bool
    reason: str


class Judge(Protocol):
    """Scores a run's transcript against a rubric."""

    def judge(self, request: JudgeRequest) -> JudgeVerdict:
        """Answer one request; raise on any provider failure."""
        ...


class JudgeConfigError(ValueError):
    """A judge provider that cannot work: raised before any trial runs."""


def check_judge_config(config: Mapping[str, Any], *, env: Mapping[str, str] | None = None) -> None:
    """Refuse a judge configuration that cannot work, with every problem at once.

    Args:
        config: `{provider: anthropic|openai, model: ..., base_url: http(s)://..., api_key_env: NAME}`
            (`api_key_env` optional for a local endpoint).
        env: The environment the judge will read its key from (default: os.environ).

    Raises:
        JudgeConfigError: naming each problem.
    """
    environ = os.environ if env is None else env
    problems: list[str] = []
    provider = config.get("provider")
    if provider not in PROVIDERS:
        problems.append(f"provider {provider!r} is not one of {', '.join(PROVIDERS)}")
    if not config.get("model"):
        problems.append("model is missing")
    base_url = config.get("base_url")
    if base_url is not None:
        parsed = urlparse(str(base_url))
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            problems.append(f"base_url {base_url!r} is not an http(s) URL")
    key_env = config.get("api_key_env")
    if key_env is not None and not environ.get(str(key_env)):
        problems.append(f"api_key_env {key_env} is not set")
    unknown = sorted(
        set(config) - {"provider", "model", "base_url", "api_key_env", "timeout_s", "max_tokens"}
    )
    if unknown:
        problems.append(f"unknown key(s): {', '.join(unknown)}")
    if problems:
        raise JudgeConfigError("judge misconfigured: " + "; ".join(problems))
