"""Jinja2 for template-typed fields only: sandboxed, StrictUndefined, at compile time, bounded.

A template that fails is reported where its mistake is: at the template's own file and at
Jinja's line within it (a prompt file's line; line k of a block scalar in YAML), so a user
check kind's broken `run` is one error at the kind, not one per scenario that uses it.

A template is untrusted input: it renders in `compiler.template_sandbox`, bounded in memory and
in work; past a bound it is an error (E301) like any other.
"""

from __future__ import annotations

from collections.abc import Generator
from types import TracebackType
from typing import Any, cast

import jinja2
from jinja2 import meta, nodes

from compiler.errors import Collector, Loc
from compiler.template_meter import MAX_RENDERED, TooLarge
from compiler.template_sandbox import environment, template
from compiler.yamlio import Doc, Path_, dotted

HINT = "compile-time templates see only `scenario`, `project` and the check's params"
RENDER_ERRORS = (
    jinja2.TemplateError,
    ArithmeticError,
    AttributeError,
    LookupError,
    TypeError,
    ValueError,
    RuntimeError,
    MemoryError,
)
"""What evaluating a user's template can raise (`{{ 1/0 }}`, `{{ 'a' + 1 }}`, `{{ 5|wordwrap }}`,
a recursion too deep): its error, never a crash."""


class TemplateError(Exception):
    """A template did not render; the message says why, `line` where (1-based, in the template)."""

    def __init__(self, message: str, line: int = 1) -> None:
        super().__init__(message)
        self.line = line


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
    if len(text) > MAX_RENDERED:
        raise TemplateError(str(TooLarge()))
    if not is_template(text):
        return text
    try:
        return _bounded_render(template(text), context)
    except jinja2.TemplateSyntaxError as exc:
        raise TemplateError(str(exc.message or exc), exc.lineno) from exc
    except RENDER_ERRORS as exc:
        raise TemplateError(str(exc), _template_line(exc.__traceback__)) from exc


def _bounded_render(template: jinja2.Template, context: dict[str, Any]) -> str:
    """The template's output, refused once it passes MAX_RENDERED characters (a loop that prints
    for ever): the error is thrown in where the template stands, so it names the template's line."""
    parts: list[str] = []
    size = 0
    chunks = cast("Generator[str, None, None]", template.generate(**context))
    for chunk in chunks:
        size += len(chunk)
        parts.append(chunk)
        if size > MAX_RENDERED:
            chunks.throw(TooLarge())
    return "".join(parts)


def undefined_names(text: str, known: set[str]) -> list[tuple[str, int]]:
    """Names a template reads that no context provides, with their lines (raises TemplateError on syntax)."""
    if not is_template(text):
        return []
    try:
        ast = environment().parse(text)
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
