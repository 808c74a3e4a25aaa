"""Jinja2 for template-typed fields only: sandboxed, StrictUndefined, at compile time.

A template that fails is reported where its mistake is: at the template's own file and at
Jinja's line within it (a prompt file's line; line k of a block scalar in YAML), so a user
check kind's broken `run` is one error at the kind, not one per scenario that uses it.
"""

from __future__ import annotations

from functools import cache, lru_cache
from types import TracebackType
from typing import Any

import jinja2
from jinja2 import meta, nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment

from compiler.errors import Collector, Loc
from compiler.yamlio import Doc, Path_, dotted

HINT = "compile-time templates see only `scenario`, `project` and the check's params"
RENDER_ERRORS = (jinja2.TemplateError, ArithmeticError, LookupError, TypeError, ValueError, RecursionError)
"""What evaluating a user's template can raise (`{{ 1/0 }}`, `{{ 'a' + 1 }}`): its error, never a crash."""


class TemplateError(Exception):
    """A template did not render; the message says why, `line` where (1-based, in the template)."""

    def __init__(self, message: str, line: int = 1) -> None:
        super().__init__(message)
        self.line = line


@cache
def _env() -> ImmutableSandboxedEnvironment:
    return ImmutableSandboxedEnvironment(
        undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False
    )


@lru_cache(maxsize=4096)
def _template(text: str) -> jinja2.Template:
    # A user kind's run template is rendered once per check of that kind; compile it once.
    return _env().from_string(text)


def _template_line(tb: TracebackType | None) -> int:
    """The template line of the innermost frame Jinja attributes to the template."""
    line = 1
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "<template>":
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def is_template(text: str) -> bool:
    """Whether the text has any Jinja2 syntax (plain text renders to itself)."""
    return "{{" in text or "{%" in text or "{#" in text


def render(text: str, context: dict[str, Any]) -> str:
    """Render one template; values known only at run time are $ENV variables, never {{ }}."""
    if not is_template(text):
        return text
    try:
        return _template(text).render(**context)
    except jinja2.TemplateSyntaxError as exc:
        raise TemplateError(str(exc.message or exc), exc.lineno) from exc
    except RENDER_ERRORS as exc:
        raise TemplateError(str(exc), _template_line(exc.__traceback__)) from exc


def undefined_names(text: str, known: set[str]) -> list[tuple[str, int]]:
    """Names a template reads that no context provides, with their lines (raises TemplateError on syntax)."""
    if not is_template(text):
        return []
    try:
        ast = _env().parse(text)
    except jinja2.TemplateSyntaxError as exc:
        raise TemplateError(str(exc.message or exc), exc.lineno) from exc
    missing = meta.find_undeclared_variables(ast) - known
    found = {(n.name, n.lineno) for n in ast.find_all(nodes.Name) if n.ctx == "load" and n.name in missing}
    return sorted(found, key=lambda x: (x[1], x[0]))


def template_error(c: Collector, loc: Loc, path: Path_, message: str) -> None:
    """Record one template error (E301)."""
    c.add(loc, dotted(path), "E301", f"template error: {message}", HINT)


def render_field(
    c: Collector, doc: Doc, path: Path_, text: str, ctx: dict[str, Any], *, file: str | None = None
) -> str:
    """Render a template-typed field; a failure is a spec error at its line (in `file`, a template
    file such as prompt.md, or in the field's own YAML), the text kept."""
    try:
        return render(text, ctx)
    except TemplateError as exc:
        loc = Loc(file, exc.line, 1) if file is not None else doc.line_loc(path, exc.line)
        template_error(c, loc, path, str(exc))
        return text
