"""The LLM judge layer of grading: off by default, configured up front, degraded at grade time.

The client is `harness.grade.judge_client` (Anthropic Messages or OpenAI-compatible Chat Completions).
`check_judge_config` builds every judge a project names and raises on the first run of
a matrix — before any trial — when any is misconfigured (bad provider, base URL, missing
API key variable), listing them all. At grade time a judge that errors only makes its own
check `unavailable`, never a pass, and the rest of the grade stands.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.grade.judge_client import Judge, JudgeConfig, JudgeConfigError, JudgeVerdict, make_judge

__all__ = ["Judge", "JudgeConfigError", "JudgeVerdict", "check_judge_config"]


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
