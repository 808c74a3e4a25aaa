"""A template is bounded in work and in memory: what would loop for ever or build gigabytes is E301.

Each case compiles a copy of the valid project with one template put in a rendered field, by
`python -m harness ... compile` in a child process of its own under a time limit and an address
space limit: a regression fails the test (out of time, or a MemoryError that is no E301 naming
the cap) instead of hanging the suite or swapping the machine.
"""

from __future__ import annotations

import json
import resource
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import jinja2
import pytest
from jinja2.sandbox import ImmutableSandboxedEnvironment

from compiler.render import TemplateError, render
from compiler.template_meter import MAX_NODES, MAX_POWER_BITS, MAX_RENDERED, MAX_STEPS
from tests.helpers import ROOT, assay_argv

GUARD_S = 60
"""How long one compile may take: a bounded template fails within seconds."""
GUARD_BYTES = 2 << 30
"""The compile's address space (RLIMIT_AS): a template that builds gigabytes meets it."""
STEPS = f"template error: the template takes more than {MAX_STEPS:,} steps"
LARGE = f"template error: the template would render more than {MAX_RENDERED:,} characters"
BITS = f"template error: the template would build a number of more than {MAX_POWER_BITS:,} bits"
SCENARIO = "scenarios/fix-unused-import"

CASES = {
    # work: loops, calls and reads that print nothing
    "nested-loops": (
        "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}",
        STEPS,
    ),
    "macro-recursion": (
        "{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(60) }}",
        STEPS,
    ),
    "comparisons-read": (
        "{% set s = 'x' * 4000000 %}{% for i in range(100000) %}{% for j in range(10) %}"
        "{% if 'yz' in s %}{% endif %}{% endfor %}{% endfor %}",
        STEPS,
    ),
    "slices-copy": (
        "{% set s = 'x' * 4000000 %}{% for i in range(100000) %}{% for j in range(10) %}"
        "{% set t = s[1:] %}{% endfor %}{% endfor %}",
        STEPS,
    ),
    "filter-in-a-loop": (
        "{% for i in range(100000) %}{% for j in range(10) %}{{ ('x' * 4000000)|replace('x', 'y')|length }}"
        "{% endfor %}{% endfor %}",
        STEPS,
    ),
    "sum-of-lists": ("{{ ([[0] * 100] * 19000)|sum(start=[])|length }}", STEPS),
    "shared-parts": (
        "{% set ns = namespace(x=[0]) %}{% for i in range(60) %}{% set ns.x = [ns.x, ns.x] %}{% endfor %}{{ ns.x }}",
        STEPS,
    ),
    "many-centred": ("{{ range(100000)|map('center', 4000000)|list|length }}", STEPS),
    "lipsum": ("{{ lipsum(10**7) }}", LARGE),
    # memory: one operation whose result multiplies what it is given
    "replace-filter": ("{{ ('x' * 4000000)|replace('', 'y' * 1000) }}", LARGE),
    "replace-method": ("{{ ('x' * 4000000).replace('', 'y' * 1000) }}", LARGE),
    "join-filter": ("{{ range(100000)|join('x' * 4000000) }}", LARGE),
    "join-method": ("{{ ('x' * 4000000).join(['a'] * 100000) }}", LARGE),
    "percent-width": ("{{ '%0999999999d' % 1 }}", LARGE),
    "percent-star": ("{{ '%*d' % (999999999, 1) }}", LARGE),
    "format-filter": ("{{ '%0999999999d'|format(1) }}", LARGE),
    "format-method": ("{{ '{:>3000000000}'.format(1) }}", LARGE),
    "indent-text": ("{{ ('a\\n' * 1000)|indent('x' * 4000000) }}", LARGE),
    "indent-lines": ("{{ ('a\\n' * 200000)|indent(4000000) }}", LARGE),
    "wordwrap": ("{{ ('x ' * 100000)|wordwrap(1, wrapstring='y' * 4000000) }}", LARGE),
    "expandtabs": ("{{ ('\\t' * 4000000).expandtabs(4000000) }}", LARGE),
    "translate": ("{{ ('x' * 4000000).translate({120: 'y' * 4000000}) }}", LARGE),
    "bytes-repeat": ("{{ 'x'.encode() * 10**10 }}", LARGE),
    "nested-repeat": ("{{ [[0] * 4000000] * 4000000 }}", LARGE),
    "lazy-list": ("{{ range(1)|slice(10**9)|list|length }}", LARGE),
    "tilde-doubling": (
        "{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}",
        LARGE,
    ),
    "macro-body": (
        "{% macro d(s) %}{{ s }}{{ s }}{{ s }}{{ s }}{{ s }}{{ s }}{{ s }}{{ s }}{% endmacro %}"
        "{% set ns = namespace(s='x') %}{% for i in range(30) %}{% set ns.s = d(ns.s) %}{% endfor %}{{ ns.s }}",
        LARGE,
    ),
    "integer-squaring": (
        "{% set ns = namespace(n=10 ** 30000) %}{% for i in range(40) %}{% set ns.n = ns.n * ns.n %}{% endfor %}",
        BITS,
    ),
}


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (GUARD_BYTES, GUARD_BYTES))


def _compile_errors(project: Path) -> list[dict[str, Any]]:
    """`assay compile --check` of the project in a child process under the guards; its errors."""
    try:
        done = subprocess.run(
            assay_argv(project, "compile", "--check", "--format", "json"),
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=GUARD_S,
            preexec_fn=_limit_memory,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"assay compile ran for more than {GUARD_S} s: the template's work is not bounded")
    assert done.returncode == 2, done.stderr[-3000:]
    errors: list[dict[str, Any]] = json.loads(done.stdout)["errors"]
    return errors


def _project(valid_project: Path, tmp_path: Path, prompt: str) -> Path:
    project = tmp_path / "project"
    shutil.copytree(valid_project, project)
    (project / SCENARIO / "prompt.md").write_text(prompt, encoding="utf-8")
    return project


FAST = ("nested-loops", "replace-filter", "join-method", "percent-width", "integer-squaring")
"""The cases the fast suite runs, one of each kind of bound; the rest (each a second or so, most
of it the million steps a refused template takes) run in the `slow` session."""


@pytest.mark.parametrize(
    ("template", "message"),
    [
        pytest.param(*case, id=name, marks=() if name in FAST else pytest.mark.slow)
        for name, case in CASES.items()
    ],
)
def test_a_template_past_the_bounds_is_an_error_at_its_line(
    valid_project: Path, tmp_path: Path, template: str, message: str
) -> None:
    project = _project(valid_project, tmp_path, f"Clean up app/main.py.\n{template}\n")
    [error] = _compile_errors(project)
    assert (error["code"], error["file"], error["line"], error["path"]) == (
        "E301",
        f"{SCENARIO}/prompt.md",
        2,
        "prompt",
    )
    assert error["message"].startswith(message), error["message"]


def test_the_error_names_the_line_that_runs_out(valid_project: Path, tmp_path: Path) -> None:
    project = _project(
        valid_project,
        tmp_path,
        "Clean up app/main.py.\n{% for a in range(100000) %}\n  {% for b in range(100000) %}\n"
        "    {{- '' -}}\n  {% endfor %}\n{% endfor %}\n",
    )
    [error] = _compile_errors(project)
    assert (error["file"], error["line"], error["message"][: len(STEPS)]) == (
        f"{SCENARIO}/prompt.md",
        3,
        STEPS,
    )


@pytest.mark.slow
def test_a_template_of_too_many_parts_is_refused_before_it_is_compiled(
    valid_project: Path, tmp_path: Path
) -> None:
    """Python code is generated for every part of a template: a few megabytes of `{{ }}` would
    take gigabytes to compile."""
    project = _project(valid_project, tmp_path, "Clean up app/main.py.\n" + "{{ scenario.id }}, " * 20_000)
    [error] = _compile_errors(project)
    assert (error["code"], error["file"], error["message"]) == (
        "E301",
        f"{SCENARIO}/prompt.md",
        f"template error: the template has more than {MAX_NODES:,} parts (text, expressions, statements)",
    )


def test_a_check_command_past_the_bounds_is_an_error_at_its_yaml_line(
    valid_project: Path, tmp_path: Path
) -> None:
    project = _project(valid_project, tmp_path, "Clean up app/main.py.\n")
    scenario = project / SCENARIO / "scenario.yaml"
    line = '  - { id: compiles, kind: command, run: "python -m py_compile {{ scenario.entry }}" }\n'
    text = scenario.read_text(encoding="utf-8")
    assert line in text
    scenario.write_text(
        text.replace(
            line,
            "  - id: compiles\n    kind: command\n    run: |\n      python -m py_compile app/main.py\n"
            "      {{ ('x' * 4000000)|replace('', 'y' * 1000) }}\n",
        ),
        encoding="utf-8",
    )
    [error] = _compile_errors(project)
    assert (error["code"], error["file"], error["line"], error["path"], error["message"]) == (
        "E301",
        f"{SCENARIO}/scenario.yaml",
        14,
        "checks[0].run",
        LARGE,
    )


LEGITIMATE = [
    "{% for e in scenario.entry %}{{ loop.index }}:{{ e }}{% if not loop.last %}, {% endif %}{% endfor %}",
    "{% for k, v in scenario.meta|dictsort %}{{ k }}={{ v }};{% endfor %}{% for x in [] %}{% else %}none{% endfor %}",
    "{% for item in tree recursive %}<{{ item.name }}{% if item.children %}[{{ loop(item.children) }}]{% endif %}>"
    "{% endfor %}",
    "{% macro greet(who, punct='!') %}Hello {{ who }}{{ punct }}{% endmacro %}{{ greet('a') }} {{ greet('b', '?') }}"
    "{% macro wrap() %}[{{ caller() }}]{% endmacro %}{% call wrap() %}in {{ code }}{% endcall %}",
    "{% set ns = namespace(items=[], total=0) %}{% for i in range(5) %}{% set ns.items = ns.items + [i] %}"
    "{% set ns.total = ns.total + i %}{% endfor %}{{ ns.items }} {{ ns.total }}",
    "{% set x %}block {{ code }}{% endset %}{{ x|upper }}{% filter title %}shout {{ code }}{% endfilter %}",
    "{{ 'a' ~ 'b' ~ 1 ~ none ~ [1, 2] ~ {'k': 'v'} }} {{ [1, (2, 3)] }} {{ {'a': [1]} }} {{ text[0:5] }}{{ text[::-1] }}",
    "{{ 1 < 2 < 3 }} {{ 'a' in text }} {{ 'zz' not in text }} {{ 3 > 2 > 5 }} {{ scenario.entry == ['app/main.py'] }}",
    "{{ 2 ** 64 }} {{ 7 // 2 }} {{ 7 % 3 }} {{ 'ab' * 3 }} {{ [0] * 3 }} {{ [1] + [2] }} {{ (2 ** 64) * (2 ** 64) }}",
    "{{ '%s-%05d-%.2f' % ('x', 42, 3.14159) }} {{ '%(a)s' % {'a': 1} }} {{ '{}-{:>6}-{n}'.format('a', 'b', n='c') }}",
    "{{ text|replace('l', 'L') }} {{ text.replace('o', '0', 1) }} {{ text|center(60) }} {{ '7'.zfill(4) }}",
    "{{ text|indent(4) }}|{{ text|indent('> ', true) }}|{{ text|wordwrap(10) }}|{{ text|truncate(20) }}",
    "{{ text|urlize(10, true, target='_blank') }}|{{ text|e }}|{{ text|striptags }}|{{ text|wordcount }}",
    "{{ scenario|tojson }}|{{ scenario.meta|tojson(indent=2) }}|{{ scenario|pprint }}",
    "{{ range(10)|batch(3, 'x')|list }} {{ range(10)|slice(3)|list }} {{ range(10)|sum }} {{ [[1], [2]]|sum(start=[]) }}",
    "{{ scenario.checks|map(attribute='id')|join(',') }} {{ range(10)|select('odd')|map('string')|join('+') }}",
    "{{ [3, 1, 2]|sort }} {{ [1, 1, 2]|unique|list }} {{ [1, 2]|reverse|list }} {{ 'abc'|reverse }} {{ [1, 2]|last }}",
    "{{ none|default('d') }} {{ 1234567|filesizeformat }} {{ 'a b'|urlencode }} {{ {'class': 'x'}|xmlattr }}",
    "{{ '%s, %s'|format('a', 'b') }} {{ ', '.join(scenario.entry) }} {{ 'a,b'.split(',') }} {{ text.splitlines() }}",
    "{% if code is string and 3 is odd %}ok{% endif %} {{ range(5)|select('in', [1, 3])|list }} {{ 'x'.encode() }}",
    "{% set c = cycler('a', 'b') %}{{ c.next() }}{{ c.next() }} {{ dict(a=1) }} {{ namespace(a=1).a }}",
    "{% autoescape true %}{{ '<b>' }}{{ '<i>'|safe }}{{ '<' ~ 'x' }}{% endautoescape %}{{ '<b>' }}",
]
"""Templates that use loops, macros, literals, operators and the built-in filters as prompts and
commands do: the meters must not change a character of what they render."""


@pytest.mark.parametrize("template", LEGITIMATE)
def test_the_meters_change_nothing_a_template_renders(template: str) -> None:
    context = {
        "scenario": {
            "entry": ["app/main.py", "app/util.py"],
            "meta": {"x": 1, "y": [1, 2, {"z": "w"}]},
            "checks": [{"id": "a", "kind": "command"}, {"id": "b", "kind": "contains"}],
        },
        "code": "F401",
        "text": "Hello <world> & 'friends'\n\tsecond line -- with-hyphens http://127.0.0.1/x?y=1",
        "tree": [{"name": "a", "children": [{"name": "b", "children": []}, {"name": "c", "children": []}]}],
    }
    plain = ImmutableSandboxedEnvironment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    assert render(template, context) == plain.from_string(template).render(context)


def test_the_bounds_are_generous() -> None:
    assert render("{% for i in range(100000) %}{% endfor %}done", {}) == "done"
    assert render("{{ range(100000)|map('string')|join(',')|length }}", {}) == "588889"
    assert render("{{ ('x' * 1000000)|replace('x', 'yy')|length }}", {}) == "2000000"
    assert render("{{ ('ab' * 200000)|wordwrap(80)|length }}", {}) == str(400000 + 400000 // 80 - 1)
    assert len(render("{{ 'x' * n }}", {"n": MAX_RENDERED})) == MAX_RENDERED
    with pytest.raises(TemplateError, match="steps"):
        render("{% for i in range(100000) %}{% for j in range(11) %}{% endfor %}{% endfor %}", {})


def test_each_render_counts_its_own_steps() -> None:
    """Renders in threads at once (the compiler may render in threads) share no meter: each of
    these takes most of the steps one render may take, and every one of them renders."""
    template = "{% for i in range(100000) %}{% for j in range(5) %}{% endfor %}{% endfor %}done"
    with ThreadPoolExecutor(max_workers=2) as pool:
        assert list(pool.map(lambda _: render(template, {}), range(2))) == ["done"] * 2
