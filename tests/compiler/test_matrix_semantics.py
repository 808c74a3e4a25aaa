"""GitHub Actions include/exclude semantics, on the examples of GitHub's own documentation."""

from __future__ import annotations

from compiler.matrix import expand


def test_include_extends_and_appends() -> None:
    got = expand(
        {"fruit": ["apple", "pear"], "animal": ["cat", "dog"]},
        include=[
            {"color": "green"},
            {"color": "pink", "animal": "cat"},
            {"fruit": "apple", "shape": "circle"},
            {"fruit": "banana"},
            {"fruit": "banana", "animal": "cat"},
        ],
    )
    assert got.combos == [
        {"fruit": "apple", "animal": "cat", "color": "pink", "shape": "circle"},
        {"fruit": "apple", "animal": "dog", "color": "green", "shape": "circle"},
        {"fruit": "pear", "animal": "cat", "color": "pink"},
        {"fruit": "pear", "animal": "dog", "color": "green"},
        {"fruit": "banana"},
        {"fruit": "banana", "animal": "cat"},
    ]
    assert got.appended_by == [None, None, None, None, 3, 4]


def test_exclude_partial_match() -> None:
    got = expand(
        {"os": ["macos", "windows"], "version": [12, 14, 16], "environment": ["staging", "production"]},
        exclude=[
            {"os": "macos", "version": 12, "environment": "production"},
            {"os": "windows", "version": 16},
        ],
    )
    assert len(got.combos) == 9
    assert {"os": "macos", "version": 12, "environment": "production"} not in got.combos
    assert not [c for c in got.combos if c["os"] == "windows" and c["version"] == 16]


def test_include_adds_key_to_one_combination() -> None:
    got = expand(
        {"os": ["windows", "ubuntu"], "node": [14, 16]}, include=[{"os": "windows", "node": 16, "npm": 6}]
    )
    assert got.combos == [
        {"os": "windows", "node": 14},
        {"os": "windows", "node": 16, "npm": 6},
        {"os": "ubuntu", "node": 14},
        {"os": "ubuntu", "node": 16},
    ]


def test_exclude_runs_before_include_and_include_never_overwrites_originals() -> None:
    got = expand(
        {"a": [1, 2]}, exclude=[{"a": 2}], include=[{"a": 2, "b": "x"}, {"a": 1, "b": "y"}, {"b": "z"}]
    )
    # a=2 was excluded, so that include fits no original combination and is appended;
    # b is not an original key, so later includes may overwrite what earlier ones added.
    assert got.combos == [{"a": 1, "b": "z"}, {"a": 2, "b": "x"}]


def test_later_includes_never_extend_appended_combinations() -> None:
    got = expand({"a": [1]}, include=[{"a": 3}, {"a": 3, "c": True}])
    assert got.combos == [{"a": 1}, {"a": 3}, {"a": 3, "c": True}]


def test_include_only_matrix() -> None:
    got = expand({}, include=[{"x": 1}, {"y": 2}])
    assert got.combos == [{"x": 1}, {"y": 2}]
