"""The YAML loader: YAML 1.2 scalars, positions, duplicate keys, merge keys, tags, x- keys."""

from __future__ import annotations

from compiler.errors import Loc
from compiler.rawcheck import check
from compiler.specs import ExpectationDoc
from compiler.yamlio import MAX_DEPTH, dotted, parse


def test_yaml12_scalars() -> None:
    doc, errors = parse(
        "a.yaml",
        "a: off\nb: on\nc: yes\nd: no\ne: true\nf: False\ng: ~\nh:\ni: 010\nj: 0o10\nk: 0x1F\n"
        "l: 1.5e3\nm: '1'\nn: .inf\no: 1_000\n",
    )
    assert errors == []
    assert doc.data == {
        "a": "off",
        "b": "on",
        "c": "yes",
        "d": "no",
        "e": True,
        "f": False,
        "g": None,
        "h": None,
        "i": 10,
        "j": 8,
        "k": 31,
        "l": 1500.0,
        "m": "1",
        "n": float("inf"),
        "o": "1_000",
    }


def test_positions_of_keys_and_values() -> None:
    doc, _ = parse("a.yaml", "top:\n  inner: [x, {k: v}]\n")
    assert doc.loc(("top", "inner", 1, "k")) == Loc("a.yaml", 2, 18)
    assert doc.loc(("top", "inner", 1, "k"), key=True) == Loc("a.yaml", 2, 15)
    assert doc.loc(("top", "missing", "deeper")) == doc.loc(("top",))
    assert dotted(("top", "inner", 1, "k")) == "top.inner[1].k"


def test_duplicate_merge_tag_errors_all_reported() -> None:
    doc, errors = parse("a.yaml", "a: 1\nb: !custom 2\nc:\n  <<: {x: 1}\na: 3\n")
    assert [(e.line, e.col, e.code, e.path) for e in errors] == [
        (2, 4, "E002", "b"),
        (4, 3, "E004", "c.<<"),
        (5, 1, "E005", "a"),
    ]
    assert doc.data["a"] == 1


def test_x_keys_are_kept_by_the_loader() -> None:
    """Whether `x-note` is an extension depends on its map (see compiler.rawcheck), not on the loader."""
    doc, errors = parse("a.yaml", "kind: agent\nx-note: {anything: [1, 2]}\n")
    assert errors == [] and doc.data == {"kind": "agent", "x-note": {"anything": [1, 2]}}


def test_syntax_error_has_position() -> None:
    _, errors = parse("a.yaml", "a: [1, 2\nb: 3\n")
    assert len(errors) == 1 and errors[0].code == "E001" and errors[0].line >= 2


def test_json_is_read_with_positions() -> None:
    doc, errors = parse("s.json", '{\n  "id": "x",\n  "stabilityRisk": true\n}\n')
    assert errors == [] and doc.data == {"id": "x", "stabilityRisk": True}
    assert doc.loc(("stabilityRisk",)) == Loc("s.json", 3, 20)


def test_alias_bomb_is_refused() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [
        f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}]"
        for i in range(1, 9)
    ]
    doc, errors = parse("bomb.yaml", "\n".join(lines) + "\n")
    assert [e.code for e in errors] == ["E007"] and doc.data is None


def test_plain_aliases_are_fine() -> None:
    doc, errors = parse("a.yaml", "base: &b {x: 1}\nother: *b\n")
    assert errors == [] and doc.data == {"base": {"x": 1}, "other": {"x": 1}}


def test_deep_nesting_is_an_error_not_a_recursion() -> None:
    deep = "a: 1\nb: " + "[" * 600 + "]" * 600 + "\n"
    doc, errors = parse("deep.yaml", deep)
    assert doc.data is None
    assert [(e.code, e.line, e.col) for e in errors] == [("E001", 2, MAX_DEPTH + 4)]
    assert "nested more than" in errors[0].message
    _, ok = parse("deep.yaml", "b: " + "[" * MAX_DEPTH + "]" * MAX_DEPTH + "\n")
    assert ok == []


def test_a_predicate_nested_too_deep_for_the_raw_check_is_an_error() -> None:
    # cerberus builds its error tree recursively, far deeper than the nesting itself
    text = "kind: expectation\nid: d\n" + "all: [{" * 40 + "trace: {command: 1}" + "}]" * 40 + "\n"
    doc, errors = parse("x.yaml", text)
    assert errors == []
    [err] = check(doc, ExpectationDoc)
    assert (err.code, err.message) == ("E001", "nested too deeply to check")
