"""Jinja2 for template-typed fields only: sandboxed, StrictUndefined, at compile time."""

from __future__ import annotations

from functools import cache, lru_cache
from typing import Any

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment


class TemplateError(Exception):
    """A template did not render; the message says why."""


@cache
def _env() -> ImmutableSandboxedEnvironment:
    return ImmutableSandboxedEnvironment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                                         autoescape=False)


@lru_cache(maxsize=4096)
def _template(text: str) -> jinja2.Template:
    # A user kind's run template is rendered once per check of that kind; compile it once.
    return _env().from_string(text)


def render(text: str, context: dict[str, Any]) -> str:
    """Render one template; values known only at run time are $ENV variables, never {{ }}."""
    if "{{" not in text and "{%" not in text and "{#" not in text:
        return text
    try:
        return _template(text).render(**context)
    except jinja2.TemplateError as exc:
        raise TemplateError(str(exc)) from exc
