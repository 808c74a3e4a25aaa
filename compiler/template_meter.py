"""The work and the size of one render of a compile-time template, counted (`compiler.template_sandbox`).

Each render has its own meter, in its Jinja context (`MeteredContext`), shared with the contexts
derived from it: a step is a loop iteration, a call, an operator or a comparison, plus an item or
CHARS_PER_STEP characters of what each reads or builds; the step past MAX_STEPS is refused
(TooLong). `weight` measures a value (characters and items, a part held twice counted twice) and
refuses one past MAX_RENDERED (TooLarge).
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterator, KeysView, Mapping, ValuesView
from typing import Any, cast

from jinja2.runtime import Context
from jinja2.utils import Namespace

MAX_RENDERED = 4_000_000
"""Characters one template may render to, and the most characters and items a value it builds
may hold on the way, a part held twice counted twice (a prompt is a few thousand): past it the
template is an error, not a job file of gigabytes."""
MAX_STEPS = 1_000_000
"""Steps one render may take: a loop iteration, a call (of a macro, function, method, filter or
test), an operator or a comparison, plus an item or CHARS_PER_STEP characters of what each reads
or builds. The example project's templates take a handful; a template that would loop for ever
printing nothing is an error within seconds, not a compile that hangs."""
MAX_NODES = 50_000
"""Parts (text, expressions, statements) a template may have: Python code is generated for each,
at a few kilobytes apiece (a prompt has tens)."""
CHARS_PER_STEP = 100
"""Characters a step reads or builds, where C does the work (a filter that goes through a text in
Python takes a step per character)."""
MAX_POWER_BITS = 100_000
"""The largest integer `**` or `*` may build, in bits (`10 ** 10 ** 9` would compute for hours)."""
TEXTS = (str, bytes, bytearray)
SEQUENCES = (list, tuple, set, frozenset)


class TooLarge(ValueError):
    """A template builds or renders more than the caps allow."""

    def __init__(
        self, message: str = f"the template would render more than {MAX_RENDERED:,} characters"
    ) -> None:
        super().__init__(message)


class TooLong(ValueError):
    """A render took more steps than MAX_STEPS."""

    def __init__(self) -> None:
        super().__init__(
            f"the template takes more than {MAX_STEPS:,} steps "
            "(loop iterations, calls, and what they read and build)"
        )


class Meter:
    """The steps one render has taken; the one past MAX_STEPS is refused."""

    def __init__(self) -> None:
        self.steps = 0

    def spend(self, steps: int) -> None:
        self.steps += steps
        if self.steps > MAX_STEPS:
            raise TooLong()


class MeteredContext(Context):
    """A render's context (each render makes one), with its meter: shared with the contexts
    derived from it, so a call inside a loop does not start counting again."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.meter = Meter()

    def derived(self, locals: dict[str, Any] | None = None) -> Context:
        context = super().derived(locals)
        cast(MeteredContext, context).meter = self.meter
        return context


def cost(value: Any) -> int:
    """The steps reading or building a value takes, by its own length."""
    if isinstance(value, TEXTS):
        return len(value) // CHARS_PER_STEP
    if isinstance(value, (*SEQUENCES, dict)):
        return len(value)
    return 0


def spend(context: Context, *values: Any, steps: int = 1) -> None:
    cast(MeteredContext, context).meter.spend(steps + sum(map(cost, values)))


_END = object()


def weight(context: Context, value: Any, limit: int = MAX_RENDERED, *, indent: int = 0) -> int:
    """The characters and items in a value, a part it holds twice counted twice (about what
    printing it writes; with `indent`, printed a level deeper per nesting): past `limit` the value
    is too large. Each part it looks at is a step, so it stops at the cap or the end of the steps."""
    meter = cast(MeteredContext, context).meter
    if isinstance(value, TEXTS):
        if len(value) > limit:
            raise TooLarge()
        meter.spend(1 + len(value) // CHARS_PER_STEP)
        return len(value)
    total = visited = 0
    room = MAX_STEPS - meter.steps
    stack: list[Iterator[Any]] = [iter((value,))]
    while stack:
        item = next(stack[-1], _END)
        if item is _END:
            stack.pop()
            continue
        visited += 1
        total += indent * len(stack)
        if isinstance(item, Namespace):  # first: any other check calls its __getattribute__
            total += 1
            stack.append(iter((item._Namespace__attrs,)))
        elif isinstance(item, TEXTS):
            total += len(item)
        elif isinstance(item, SEQUENCES):
            total += len(item)
            stack.append(iter(item))
        elif isinstance(item, Mapping):  # a dict, or a mapping the template was given
            total += len(item)
            stack.append(x for pair in item.items() for x in pair)
        elif isinstance(item, int):
            total += item.bit_length() // 3 + 1
        elif isinstance(item, KeysView | ValuesView | ItemsView):
            total += len(item)
            stack.append(iter(item))
        else:
            total += 1
        if total > limit:
            raise TooLarge()
        if visited + total // CHARS_PER_STEP > room:
            raise TooLong()
    meter.spend(visited + total // CHARS_PER_STEP)
    return total


def built(context: Context, value: Any) -> Any:
    """A value a call, filter or operator returned, measured; an iterator counts its items."""
    if isinstance(value, Iterator) and not isinstance(value, Counted):
        return Counted(context, value)
    if isinstance(value, (*TEXTS, *SEQUENCES, Mapping, Namespace)):
        weight(context, value)
    return value


class Counted(Iterator[Any]):
    """An iterator whose every item is a step of the render (what a filter hands on lazily)."""

    def __init__(self, context: Context, items: Iterator[Any]) -> None:
        self._context = context
        self._items = items

    def __next__(self) -> Any:
        item = next(self._items)
        spend(self._context)
        return item
