"""Jinja2 for template-typed fields only: sandboxed, StrictUndefined, at compile time."""

from __future__ import annotations

from functools import cache, lru_cache
from typing import Any

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

from compiler.errors import Collector
from compiler.yamlio import Doc, Path_, dotted


class TemplateError(Exception):
    """A template did not render; the message says why."""


@cache
def _env() -> ImmutableSandboxedEnvironment:
    return ImmutableSandboxedEnvironment(
        undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False
    )


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


def render_field(
    c: Collector, doc: Doc, path: Path_, text: str, ctx: dict[str, Any], *, file: str | None = None
) -> str:
    """Render a template-typed field; a failure is a spec error at the field (or at `file`), the text kept."""
    try:
        return render(text, ctx)
    except TemplateError as exc:
        loc = doc.loc(path)
        c.add(
            loc if file is None else loc._replace(file=file, line=1, col=1),
            dotted(path),
            "E301",
            f"template error: {exc}",
            "compile-time templates see only `scenario`, `project` and the check's params",
        )
        return text
