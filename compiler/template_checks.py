"""The checks that run before a template's operation that can multiply a size (`'x' * n`,
`replace`, `join`, `%`, `format`, `indent`, `wordwrap`, ...) or take a step per character (`sort`,
`title`, ...): what it would build is weighed first, against MAX_RENDERED (`compiler.template_meter`).
`FILTER_CHECKS` names the filters' checks; `check_method` those of a text's methods.
"""

from __future__ import annotations

import io
import math
import pprint
import re
import string
from collections.abc import Callable, Iterable, Mapping, Sized
from typing import Any

from jinja2.runtime import Context
from jinja2.utils import generate_lorem_ipsum

from compiler.template_meter import CHARS_PER_STEP, MAX_RENDERED, TEXTS, TooLarge, spend, weight

_BREAKS = " \t\n\r\x0b\x0c-"
"""Where `wordwrap` may break a line (and `urlize` find a word)."""
_PRINTF = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d*))?[hlL]?[a-zA-Z%]")
"""A `%` conversion, with its width and precision."""


def power_bits(base: Any, exponent: Any) -> float:
    """About how many bits `base ** exponent` takes (0 unless both are integers and it grows)."""
    if isinstance(base, int) and isinstance(exponent, int) and abs(base) > 1 and exponent > 0:
        return exponent * math.log2(abs(base))
    return 0.0


def check_repeat(context: Context, seq: Any, times: Any) -> None:
    """`'x' * n` and `[x] * n` within the cap (an int times a text or a list)."""
    if isinstance(seq, (*TEXTS, list, tuple)) and isinstance(times, int) and times > 0:
        weight(context, seq, MAX_RENDERED // times)


def check_widths(args: Iterable[Any], kwargs: Mapping[str, Any]) -> None:
    """A width passed to a text method or filter within the cap."""
    if any(isinstance(a, int) and a > MAX_RENDERED for a in (*args, *kwargs.values())):
        raise TooLarge()


def _check_replace(text: Any, old: Any, new: Any, count: Any) -> None:
    """`replace` within the cap: each of the occurrences it replaces grows the text."""
    if isinstance(old, TEXTS) and isinstance(new, TEXTS):
        found = text.count(old) if old else len(text) + 1
        if isinstance(count, int) and count >= 0:
            found = min(found, count)
        if len(text) + found * (len(new) - len(old)) > MAX_RENDERED:
            raise TooLarge()


def check_printf(context: Context, fmt: str | bytes | bytearray, values: Any) -> None:
    """`fmt % values` within the cap: each conversion writes its width or a whole value."""
    text = fmt if isinstance(fmt, str) else fmt.decode("latin-1")
    specs = _PRINTF.findall(text)
    if specs:
        args = values if isinstance(values, tuple) else (values,)
        star = max((abs(a) for a in args if isinstance(a, int)), default=0)
        widest = max(star if n == "*" else int(n or 0) for spec in specs for n in spec)
        largest = max((weight(context, a) for a in args), default=0)
        if len(text) + len(specs) * (widest + largest) > MAX_RENDERED:
            raise TooLarge()


def _check_format(context: Context, fmt: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> None:
    """`fmt.format(...)` within the cap, the same way (a width may be a field of its own)."""
    specs = [spec or "" for _, name, spec, _ in string.Formatter().parse(fmt) if name is not None]
    spend(context, steps=len(specs))  # the sandbox formats field by field, in Python
    if specs:
        values = (*args, *kwargs.values())
        widths = [int(n) for spec in specs for n in re.findall(r"\d+", spec)]
        if any("{" in spec for spec in specs):
            widths += [abs(v) for v in values if isinstance(v, int)]
        largest = max((weight(context, v) for v in values), default=0)
        if len(fmt) + len(specs) * (max(widths, default=0) + largest) > MAX_RENDERED:
            raise TooLarge()


def check_method(
    context: Context, text: Any, name: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]
) -> tuple[Any, ...]:
    """A text's (or an int's) method within the cap; the arguments it is to be called with."""
    check_widths(args, kwargs)  # center, ljust, rjust, zfill, to_bytes
    if isinstance(text, int):
        return args
    if name == "replace" and len(args) >= 2:
        _check_replace(text, args[0], args[1], args[2] if len(args) > 2 else kwargs.get("count", -1))
    elif name == "expandtabs":
        size = param(args, kwargs, 0, "tabsize", 8)
        tabs = text.count("\t" if isinstance(text, str) else b"\t")
        if isinstance(size, int) and len(text) + tabs * size > MAX_RENDERED:
            raise TooLarge()
    elif name == "join" and len(args) == 1:
        return (_joined_items(context, args[0], text),)
    elif name in ("format", "format_map") and isinstance(text, str):
        _check_format(context, text, args, kwargs)
    elif name == "translate" and isinstance(text, str) and args:  # a character may become a text
        table = args[0].values() if isinstance(args[0], Mapping) else args[0]
        longest = [len(v) for v in table if isinstance(v, str)] if isinstance(table, Iterable) else []
        if len(text) * max(longest, default=1) > MAX_RENDERED:
            raise TooLarge()
    return args


def param(args: tuple[Any, ...], kwargs: Mapping[str, Any], index: int, name: str, default: Any) -> Any:
    """A filter's argument, given by position (after the value) or by name."""
    return args[index] if len(args) > index else kwargs.get(name, default)


Check = Callable[[Context, Any, tuple[Any, ...], dict[str, Any]], Any]
"""A filter's check before it runs: (context, value, args, kwargs) -> the value it is to take."""


def _widths(context: Context, value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    check_widths(args, kwargs)  # center(width)
    return value


def _by_character(context: Context, value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """A filter that goes through a text a character, word or line at a time in Python (sorts it,
    wraps it): each character is a step, not each CHARS_PER_STEP."""
    if isinstance(value, TEXTS):
        spend(context, steps=len(value))
    return value


def _batches(context: Context, value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    check_widths(args, kwargs)  # batch(linecount), slice(slices)
    return _by_character(context, value, args, kwargs)


def _indent(context: Context, value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    width = param(args, kwargs, 0, "width", 4)
    each = len(width) if isinstance(width, str) else width if isinstance(width, int) else 0
    text = str(value)
    lines = text.count("\n") + 1
    spend(context, steps=lines)  # it indents line by line, in Python
    if len(text) + lines * each > MAX_RENDERED:
        raise TooLarge()
    return value


def _replace(context: Context, value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    old, new = str(param(args, kwargs, 0, "old", "")), str(param(args, kwargs, 1, "new", ""))
    _check_replace(str(value), old, new, param(args, kwargs, 2, "count", None))
    return value


def _join(context: Context, value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return _joined_items(context, value, str(param(args, kwargs, 0, "d", "")))


def _joined_items(context: Context, items: Iterable[Any], separator: Sized) -> list[Any]:
    """The items a join (the filter, or a text's method) is to join, within the cap once the
    separator stands between each two; a list, so that an iterator is read once."""
    listed = list(items)
    weight(context, listed, MAX_RENDERED - max(len(listed) - 1, 0) * len(separator))
    return listed


def _format(context: Context, value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    check_printf(context, str(value), kwargs or args)
    return value


def _wordwrap(context: Context, value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    text, width = str(_by_character(context, value, args, kwargs)), param(args, kwargs, 0, "width", 79)
    wrap = param(args, kwargs, 2, "wrapstring", None) or context.environment.newline_sequence
    lines = sum(map(text.count, _BREAKS)) + 1  # a line ends at a break, or where a word is cut
    lines += len(text) // width if isinstance(width, int) and width > 0 else 0
    if len(text) + lines * len(str(wrap)) > MAX_RENDERED:
        raise TooLarge()
    return value


def _urlize(context: Context, value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    text = str(_by_character(context, value, args, kwargs))
    extra = sum(len(str(param(args, kwargs, i, name, None) or "")) for i, name in ((2, "target"), (3, "rel")))
    if 6 * len(text) + (sum(map(text.count, _BREAKS)) + 1) * (extra + 64) > MAX_RENDERED:
        raise TooLarge()  # every word may become a link carrying `target` and `rel`
    return value


def _sum(context: Context, value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    start = param(args, kwargs, 1, "start", 0)
    if not isinstance(start, (*TEXTS, list, tuple)):
        return value
    items = list(value)  # sums of lists: each `+` copies all that came before
    spend(context, steps=len(items) * weight(context, [start, *items]) // CHARS_PER_STEP)
    return items


def _tojson(context: Context, value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    indent = param(args, kwargs, 0, "indent", None)
    if isinstance(indent, int | str):
        weight(context, value, indent=1 + (len(indent) if isinstance(indent, str) else indent))
    return value


def _pprinted(context: Context, value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    weight(context, value, indent=1)  # each level's text is written again at the level below
    return value


FILTER_CHECKS: dict[str, Check] = {
    "batch": _batches,
    "center": _widths,
    "format": _format,
    "groupby": _by_character,
    "indent": _indent,
    "join": _join,
    "max": _by_character,
    "min": _by_character,
    "pprint": _pprinted,
    "replace": _replace,
    "slice": _batches,
    "sort": _by_character,
    "sum": _sum,
    "title": _by_character,
    "tojson": _tojson,
    "unique": _by_character,
    "urlize": _urlize,
    "wordcount": _by_character,
    "wordwrap": _wordwrap,
}
"""The filters whose result can be much larger than what they are given, or that take much
longer, and their checks."""


class _CappedText(io.StringIO):
    """Text written piece by piece, refused past MAX_RENDERED before it is all there."""

    def write(self, s: str, /) -> int:
        if self.tell() + len(s) > MAX_RENDERED:
            raise TooLarge()
        return super().write(s)


def pprint_capped(value: Any) -> str:
    """Jinja's `pprint` (pformat), its text capped as it is written: a long key indents every
    line under it."""
    out = _CappedText()
    pprint.PrettyPrinter(stream=out).pprint(value)
    return out.getvalue()[:-1]  # pformat is pprint without the newline


def lipsum_capped(*args: Any, **kwargs: Any) -> str:
    """Jinja's `lipsum`, its paragraphs and words within the cap."""
    counts = [
        param(args, kwargs, i, name, d) for i, name, d in ((0, "n", 5), (2, "min", 20), (3, "max", 100))
    ]
    if all(isinstance(c, int) for c in counts) and counts[0] * max(counts[1:]) * 12 > MAX_RENDERED:
        raise TooLarge()
    return generate_lorem_ipsum(*args, **kwargs)
