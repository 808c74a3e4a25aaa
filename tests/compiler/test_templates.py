"""Jinja2 renders only template-typed fields, sandboxed, with StrictUndefined."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from compiler.errors import SpecErrors
from compiler.pipeline import build
from compiler.render import MAX_RENDERED, TemplateError, render


def test_sandbox_and_strict_undefined() -> None:
    assert (
        render("python -m py_compile {{ scenario.entry[0] }}", {"scenario": {"entry": ["a.py"]}})
        == "python -m py_compile a.py"
    )
    with pytest.raises(TemplateError, match="undefined"):
        render("{{ nope }}", {})
    with pytest.raises(TemplateError):
        render("{{ ''.__class__.__mro__[1].__subclasses__() }}", {})
    assert render("no braces: $BENCH_RUN_DIR", {}) == "no braces: $BENCH_RUN_DIR"


def _project(valid_project: Path, tmp_path: Path, checks: str) -> Path:
    proj = tmp_path / "p"
    shutil.copytree(valid_project, proj)
    path = proj / "scenarios/fix-unused-import/scenario.yaml"
    text = path.read_text()
    start, end = text.index("checks:\n"), text.index("expectations:")
    path.write_text(text[:start] + checks + text[end:])
    return proj


def test_non_template_fields_stay_literal(valid_project: Path, tmp_path: Path) -> None:
    proj = _project(
        valid_project,
        tmp_path,
        "checks:\n"
        "  - { id: compiles, kind: command, run: 'echo {{ scenario.id }}' }\n"
        "  - { id: keeps-api, kind: contains, file: app/main.py, text: ['{{ not rendered }}', '{#'] }\n",
    )
    plan = build(proj)
    checks = plan.validated.scenarios["fix-unused-import"].job.checks
    assert checks[0].params["run"] == "echo fix-unused-import"
    assert checks[1].params["text"] == ["{{ not rendered }}", "{#"]


def test_sandbox_violation_is_a_spec_error(valid_project: Path, tmp_path: Path) -> None:
    proj = _project(
        valid_project,
        tmp_path,
        "checks:\n"
        "  - { id: compiles, kind: command, run: \"{{ ''.__class__.__mro__[1].__subclasses__() }}\" }\n"
        "  - { id: keeps-api, kind: contains, file: app/main.py, text: x }\n",
    )
    with pytest.raises(SpecErrors) as info:
        build(proj)
    [err] = info.value.errors
    assert (err.code, err.path, err.file, err.line) == (
        "E301",
        "checks[0].run",
        "scenarios/fix-unused-import/scenario.yaml",
        10,
    )


@pytest.mark.parametrize(
    ("template", "line"),
    [
        ("{{ 'x' * 100000000000 }}", 1),  # a MemoryError before the cap
        ("fine\n{{ 'x' * 10**8 }}", 2),  # 100 MB of prompt before the cap
        ("{{ [0] * 10**9 }}", 1),
        ("{{ 10 ** (10 ** 10) }}", 1),  # hours of arithmetic before the cap
        ("{{ 'x'.ljust(10**10) }}", 1),
        ("{{ 'x' | center(10**10) }}", 1),
        ("a\nb\n{% for i in range(100000) %}{{ 'y' * 100 }}{% endfor %}", 3),  # 10 MB, 100 bytes at a time
    ],
)
def test_a_template_that_renders_too_much_is_a_template_error(template: str, line: int) -> None:
    with pytest.raises(TemplateError, match="more than") as info:
        render(template, {})
    assert info.value.line == line


@pytest.mark.parametrize(
    ("template", "says"),
    [
        ("{{ 5|wordwrap }}", "no attribute 'splitlines'"),  # a filter given a value it cannot take
        ("{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}", "recursion"),  # too deep for the stack
        ("{{ 1/0 }}", "division by zero"),
    ],
)
def test_whatever_a_template_raises_is_its_error_not_a_crash(template: str, says: str) -> None:
    with pytest.raises(TemplateError, match=says):
        render(template, {})


def test_the_size_cap_is_generous_and_covers_plain_text() -> None:
    assert (
        render("{{ 'ab' * 3 }} {{ 2 ** 64 }} {{ 'x' | center(5) }}", {})
        == "ababab 18446744073709551616   x  "
    )
    assert len(render("{{ 'x' * MAX }}", {"MAX": MAX_RENDERED})) == MAX_RENDERED
    with pytest.raises(TemplateError, match="more than"):
        render("x" * (MAX_RENDERED + 1), {})
