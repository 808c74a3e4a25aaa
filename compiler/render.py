"""Jinja2 for template-typed fields only: sandboxed, StrictUndefined, at compile time.

A template that fails is reported where its mistake is: at the template's own file and at
Jinja's line within it (a prompt file's line; line k of a block scalar in YAML), so a user
check kind's broken `run` is one error at the kind, not one per scenario that uses it.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from functools import cache, lru_cache
from types import TracebackType
from typing import Any, cast

import jinja2
from jinja2 import meta, nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment

from compiler.errors import Collector, Loc
from compiler.yamlio import Doc, Path_, dotted

HINT = "compile-time templates see only `scenario`, `project` and the check's params"
RENDER_ERRORS = (
    jinja2.TemplateError,
    ArithmeticError,
    LookupError,
    TypeError,
    ValueError,
    RecursionError,
    MemoryError,
)
"""What evaluating a user's template can raise (`{{ 1/0 }}`, `{{ 'a' + 1 }}`): its error, never a crash."""
MAX_RENDERED = 4_000_000
"""Characters one template may render to, and the longest text or list it may build on the way
(a prompt is a few thousand): past it the template is an error, not a job file of gigabytes."""
MAX_POWER_BITS = 100_000
"""The largest integer `**` may build, in bits (`10 ** 10 ** 9` would compute for hours)."""
_GROWING_FILTERS = ("center", "indent")
"""Filters whose integer argument is the width of the text they return."""


class _TooLarge(ValueError):
    """A template builds or renders more than the caps allow."""

    def __init__(
        self, message: str = f"the template would render more than {MAX_RENDERED:,} characters"
    ) -> None:
        super().__init__(message)


class _Sandbox(ImmutableSandboxedEnvironment):
    """The sandbox, with the operations that build large values bounded before they run."""

    intercepted_binops = frozenset({"*", "**"})

    def call_binop(self, context: jinja2.runtime.Context, operator: str, left: Any, right: Any) -> Any:
        if operator == "*":
            _check_repeat(left, right)
            _check_repeat(right, left)
        elif _power_bits(left, right) > MAX_POWER_BITS:
            raise _TooLarge(f"the template would build a number of more than {MAX_POWER_BITS:,} bits")
        return super().call_binop(context, operator, left, right)

    def call(__self, __context: jinja2.runtime.Context, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(getattr(__obj, "__self__", None), str):  # 'x'.ljust(n), 'x'.center(n), 'x'.zfill(n)
            _check_widths(args, kwargs)
        return super().call(__context, __obj, *args, **kwargs)


def _power_bits(base: Any, exponent: Any) -> float:
    """About how many bits `base ** exponent` takes (0 unless both are integers and it grows)."""
    if isinstance(base, int) and isinstance(exponent, int) and abs(base) > 1 and exponent > 0:
        return exponent * math.log2(abs(base))
    return 0.0


def _check_repeat(seq: Any, times: Any) -> None:
    """`'x' * n` and `[x] * n` within the cap (an int times a text or a list)."""
    if isinstance(seq, str | list | tuple) and isinstance(times, int) and len(seq) * times > MAX_RENDERED:
        raise _TooLarge()


def _check_widths(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """A width passed to a text method or filter within the cap."""
    if any(isinstance(a, int) and a > MAX_RENDERED for a in (*args, *kwargs.values())):
        raise _TooLarge()


def _bounded(name: str, f: Any) -> Any:
    def bounded(*args: Any, **kwargs: Any) -> Any:
        _check_widths(args[1:], kwargs)
        return f(*args, **kwargs)

    bounded.__dict__.update(f.__dict__)  # Jinja's pass_* markers
    bounded.__name__ = name
    return bounded


class TemplateError(Exception):
    """A template did not render; the message says why, `line` where (1-based, in the template)."""

    def __init__(self, message: str, line: int = 1) -> None:
        super().__init__(message)
        self.line = line


@cache
def _env() -> ImmutableSandboxedEnvironment:
    env = _Sandbox(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False)
    for name in _GROWING_FILTERS:
        env.filters[name] = _bounded(name, env.filters[name])
    return env


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
    if len(text) > MAX_RENDERED:
        raise TemplateError(str(_TooLarge()))
    if not is_template(text):
        return text
    try:
        return _bounded_render(_template(text), context)
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
            chunks.throw(_TooLarge())
    return "".join(parts)


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
