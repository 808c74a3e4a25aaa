"""The sandbox compile-time templates render in: Jinja2's, bounded in memory and in work.

A template is untrusted input (an imported dataset brings its own), so rendering one is bounded
by counting, never by a clock (the outcome must not depend on the machine, and the compiler may
render in threads): a template may have MAX_NODES parts, nothing it builds may pass MAX_RENDERED
characters and items, checked before the operations that multiply a size run, and one render may
take MAX_STEPS steps. The sandbox sees calls, filters, tests and operators; what it would not see
(loops, `~`, literals, slices, comparisons) `_Metered` routes through it when a template is
compiled. `compiler.render` renders with it and reports what it refuses (TooLarge, TooLong).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sized
from functools import cache, lru_cache
from itertools import islice
from typing import Any, cast

import jinja2
from jinja2 import nodes
from jinja2.runtime import Context, LoopContext, markup_join, str_join
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.visitor import NodeTransformer

from compiler.template_checks import (
    FILTER_CHECKS,
    Check,
    check_method,
    check_printf,
    check_repeat,
    lipsum_capped,
    power_bits,
    pprint_capped,
)
from compiler.template_meter import (
    MAX_NODES,
    MAX_POWER_BITS,
    MAX_RENDERED,
    TEXTS,
    Counted,
    MeteredContext,
    TooLarge,
    built,
    spend,
    weight,
)


def _metered(f: Callable[..., Any], check: Check | None = None) -> Callable[..., Any]:
    """A filter or test that takes its steps, checked before it runs, its result measured."""

    @jinja2.pass_context
    def metered(context: Context, value: Any, *args: Any, **kwargs: Any) -> Any:
        spend(context, value, *args, *kwargs.values())
        if check is not None:
            value = check(context, value, args, kwargs)
        return built(context, context.call(f, value, *args, **kwargs))

    return metered


def _joined(parts: Iterable[str]) -> str:
    """A buffer's text (a macro's, a `{% set %}` block's), refused before it is joined past the cap."""
    chunks = list(parts)
    if sum(map(len, chunks)) > MAX_RENDERED:
        raise TooLarge()
    return "".join(chunks)


@jinja2.pass_context
def _finalize(context: Context, value: Any) -> Any:
    """What `{{ }}` prints, measured before it is made text."""
    weight(context, value)
    return value


class _Sandbox(ImmutableSandboxedEnvironment):
    """The sandbox, metered: every call, filter, test and operator takes its steps, and the
    operations that build large values are bounded before they run."""

    intercepted_binops = frozenset({"+", "*", "%", "**"})
    context_class = MeteredContext
    concat = staticmethod(_joined)

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        spend(context, left, right)
        if operator == "*":
            check_repeat(context, left, right)
            check_repeat(context, right, left)
            if isinstance(left, int) and isinstance(right, int):
                self._check_bits(left.bit_length() + right.bit_length())
        elif operator == "**":
            self._check_bits(power_bits(left, right))
        elif operator == "%" and isinstance(left, TEXTS):
            check_printf(context, left, right)
        return built(context, super().call_binop(context, operator, left, right))

    @staticmethod
    def _check_bits(bits: float) -> None:
        if bits > MAX_POWER_BITS:
            raise TooLarge(f"the template would build a number of more than {MAX_POWER_BITS:,} bits")

    def call(__self, __context: Context, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(__obj, "__self__", None) is __self:  # a meter_* method `_Metered` put in
            return __obj(__context, *args)
        method = getattr(__obj, "__wrapped__", __obj)  # the sandbox wraps str.format
        owner = getattr(method, "__self__", None)
        spend(__context, owner, *args, *kwargs.values())
        if isinstance(owner, (*TEXTS, int)):
            args = check_method(__context, owner, getattr(method, "__name__", ""), args, kwargs)
        elif isinstance(__obj, LoopContext) and args:  # `loop(children)` in a recursive loop
            args = (__self.meter_loop(__context, args[0]), *args[1:])
        return built(__context, super().call(__context, __obj, *args, **kwargs))

    def meter_loop(self, context: Context, iterable: Any) -> Any:
        """A `for` loop's iterable: every iteration is a step (all at once when it has a length)."""
        if isinstance(iterable, Counted):
            return iterable
        if isinstance(iterable, Sized):
            spend(context, steps=len(iterable))
            return iterable
        return Counted(context, iter(iterable))

    def meter_concat(self, context: Context, *parts: Any) -> Any:
        """`a ~ b`, refused before it joins more than the cap."""
        room = MAX_RENDERED
        for part in parts:
            room -= weight(context, part, room)
        return (markup_join if context.eval_ctx.autoescape else str_join)(parts)

    def meter_literal(self, context: Context, value: Any) -> Any:
        """A list, tuple or dict written in the template (`[x, x]` doubles x)."""
        weight(context, value)
        return value

    def meter_slice(self, context: Context, value: Any, start: Any, stop: Any, step: Any) -> Any:
        """`value[start:stop:step]`, the part it copies a cost."""
        part = value[start:stop:step]
        spend(context, part)
        return part

    def meter_operand(self, context: Context, value: Any) -> Any:
        """An operand of a comparison (`in` and `==` read it)."""
        spend(context, value)
        return value


class _Metered(NodeTransformer):
    """Routes what Jinja runs outside the sandbox's view through `_Sandbox.call` to its meter_*
    methods: a loop's iterable, `~`, list, tuple and dict literals, slices, comparisons."""

    def _meter(self, name: str, node: nodes.Node, *args: nodes.Node) -> nodes.Call:
        call = nodes.Call(nodes.EnvironmentAttribute(f"meter_{name}"), list(args), [], None, None)
        call.set_lineno(node.lineno)
        return call

    def visit_For(self, node: nodes.For) -> nodes.Node:
        self.generic_visit(node)
        node.iter = self._meter("loop", node, node.iter)
        return node

    def visit_Concat(self, node: nodes.Concat) -> nodes.Node:
        self.generic_visit(node)
        return self._meter("concat", node, *node.nodes)

    def visit_List(self, node: nodes.List | nodes.Tuple | nodes.Dict) -> nodes.Node:
        self.generic_visit(node)
        return node if getattr(node, "ctx", "load") != "load" else self._meter("literal", node, node)

    visit_Tuple = visit_Dict = visit_List

    def visit_Getitem(self, node: nodes.Getitem) -> nodes.Node:
        self.generic_visit(node)
        if not isinstance(node.arg, nodes.Slice):
            return node
        bounds = (node.arg.start, node.arg.stop, node.arg.step)
        return self._meter("slice", node, node.node, *(nodes.Const(None) if b is None else b for b in bounds))

    def visit_Compare(self, node: nodes.Compare) -> nodes.Node:
        self.generic_visit(node)
        node.expr = self._meter("operand", node, node.expr)
        for op in node.ops:
            op.expr = self._meter("operand", node, op.expr)
        return node


@cache
def environment() -> ImmutableSandboxedEnvironment:
    """The one sandbox every template renders in."""
    env = _Sandbox(
        undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False, finalize=_finalize
    )
    env.filters["pprint"] = pprint_capped
    env.filters = {name: _metered(f, FILTER_CHECKS.get(name)) for name, f in env.filters.items()}
    tests = cast(dict[str, Callable[..., Any]], env.tests)  # typed as builtins.function, not callable
    env.tests = {name: _metered(test) for name, test in tests.items()}
    env.globals["lipsum"] = lipsum_capped
    return env


@lru_cache(maxsize=4096)
def template(text: str) -> jinja2.Template:
    """A template compiled in the sandbox, its loops, `~`, literals, slices and comparisons metered."""
    # A user kind's run template is rendered once per check of that kind; compile it once.
    env = environment()
    tree = env.parse(text)
    if next(islice(tree.find_all(nodes.Node), MAX_NODES, None), None) is not None:
        raise TooLarge(f"the template has more than {MAX_NODES:,} parts (text, expressions, statements)")
    tree = cast(nodes.Template, _Metered().visit(tree))
    tree.set_environment(env)  # the nodes the meters added
    return env.from_string(tree)
