"""A spec with errors of its own is reported at its file, never again as "unknown" at its uses.

Each case breaks one definition of a compiled copy of the valid project (a check kind, an agent,
an expectation, a scenario, a matrix another extends) and compiles it again with `assay compile`:
exactly the definition's own errors come out. A name no file declares is still an error at each
reference to it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers import assay, compiled_copy

Where = tuple[str, int, str]
"""An error as (file, line, code)."""

LINT = "specs/checks/lint.yaml"
GOOD = "specs/agents/scripted-good.yaml"
EXPECTATION = "specs/expectations/checks-before-finishing.yaml"
SCENARIO = "scenarios/fix-unused-import/scenario.yaml"
DEFAULT = "specs/matrices/default.yaml"


def _write(rel: str, text: str) -> Callable[[Path], None]:
    def change(root: Path) -> None:
        (root / rel).write_text(text, encoding="utf-8")

    return change


def _replace(rel: str, old: str, new: str) -> Callable[[Path], None]:
    def change(root: Path) -> None:
        text = (root / rel).read_text(encoding="utf-8")
        assert old in text, f"{rel} no longer holds {old!r}"
        (root / rel).write_text(text.replace(old, new), encoding="utf-8")

    return change


def _all(*changes: Callable[[Path], None]) -> Callable[[Path], None]:
    def change(root: Path) -> None:
        for one in changes:
            one(root)

    return change


USES_THE_SCENARIO = _write(
    "specs/matrices/listed.yaml",
    "kind: matrix\nid: listed\nagents: [scripted-good]\nscenarios: [fix-unused-import]\n"
    "include:\n  - { tool: bin, knowledge: none, network: off, agent: scripted-good, scenario: fix-unused-import }\n",
)
"""A matrix naming fix-unused-import in `scenarios:` and in an include entry."""
A_CHILD_MATRIX = _write("specs/matrices/child.yaml", "kind: matrix\nid: child\nextends: base\n")
"""A matrix extending `base`."""

BROKEN: dict[str, tuple[Callable[[Path], None], list[Where]]] = {
    # The check kind `lint` is used by fix-unused-import's check `lint-clean`.
    "check-kind-fails-validation": (
        _replace(LINT, "{ type: integer, default: 0 }", "{ type: integr, default: 0 }"),
        [(LINT, 6, "E104")],
    ),
    "check-kind-yaml-syntax": (_write(LINT, "kind: check-kind\nid: [lint\n"), [(LINT, 3, "E001")]),
    "check-kind-wrong-kind": (_replace(LINT, "kind: check-kind", "kind: checkkind"), [(LINT, 1, "E104")]),
    "check-kind-without-id": (_replace(LINT, "id: lint\n", ""), [(LINT, 1, "E102")]),
    "check-kind-not-utf8": (
        lambda root: (root / LINT).write_bytes(
            (root / LINT).read_bytes().replace(b"one rule", b"one r\xe8gle")
        ),
        [(LINT, 3, "E001")],
    ),
    # The kind validates alone but names an unknown authority: a check of it inherits that.
    "check-kind-unknown-authority": (
        _replace(LINT, "authority: ruff", "authority: rufff"),
        [(LINT, 11, "E221")],
    ),
    # A project kind wins over a built-in of its name, broken or not: its checks are not the built-in's.
    "check-kind-shadowing-a-built-in": (
        _all(
            _write(
                "specs/checks/contains.yaml",
                "kind: check-kind\nid: contains\nparams: { pattern: { type: string } }\n"
                "run: grep -rq {{ pattern }} .\ntimeout_s: soon\n",
            ),
            _replace(
                SCENARIO,
                'kind: contains, file: app/main.py, text: ["def handler("]',
                "kind: contains, pattern: handler",
            ),
        ),
        [("specs/checks/contains.yaml", 5, "E103")],
    ),
    # scripted-good is extended by scripted-weak and named by both matrices (agents:, include).
    "agent-fails-validation": (
        _replace(GOOD, "adapter: scripted", "adapter: scripted\nrequires: git"),
        [(GOOD, 4, "E103")],
    ),
    "agent-yaml-syntax": (
        _write(GOOD, "kind: agent\nid: scripted-good\nadapter: [scripted\n"),
        [(GOOD, 4, "E001")],
    ),
    "agent-wrong-kind": (_replace(GOOD, "kind: agent", "kind: agnt"), [(GOOD, 1, "E104")]),
    "agent-without-id": (_replace(GOOD, "id: scripted-good\n", ""), [(GOOD, 1, "E102")]),
    "agent-not-a-map": (_write(GOOD, "- kind: agent\n"), [(GOOD, 1, "E103")]),
    "agent-id-not-a-slug": (
        _all(
            *(
                _replace(rel, "scripted-good", "Scripted-Good")
                for rel in (GOOD, "specs/agents/scripted-weak.yaml", DEFAULT, "specs/matrices/smoke.yaml")
            )
        ),
        [(GOOD, 2, "E110")],
    ),
    # The expectation is named by fix-unused-import's `expectations:`.
    "expectation-fails-validation": (_replace(EXPECTATION, "min: 1", "min: one"), [(EXPECTATION, 5, "E103")]),
    "expectation-yaml-syntax": (
        _write(EXPECTATION, "kind: expectation\nid: [x\n"),
        [(EXPECTATION, 3, "E001")],
    ),
    "expectation-wrong-kind": (
        _replace(EXPECTATION, "kind: expectation", "kind: expectatoin"),
        [(EXPECTATION, 1, "E104")],
    ),
    # fix-unused-import is named by a matrix's `scenarios:` and an include's `scenario:`.
    "scenario-fails-validation": (
        _all(USES_THE_SCENARIO, _replace(SCENARIO, "split: test", "split: dev")),
        [(SCENARIO, 6, "E104")],
    ),
    "scenario-yaml-syntax": (
        _all(USES_THE_SCENARIO, _write(SCENARIO, "kind: scenario\nid: [fix-unused-import\n")),
        [(SCENARIO, 3, "E001")],
    ),
    "scenario-wrong-kind": (
        _all(USES_THE_SCENARIO, _replace(SCENARIO, "kind: scenario", "kind: scenaro")),
        [(SCENARIO, 2, "E104")],
    ),
    "scenario-without-its-file": (
        _all(USES_THE_SCENARIO, lambda root: (root / SCENARIO).unlink()),
        [("scenarios/fix-unused-import", 1, "E201")],
    ),
    # A matrix another one extends.
    "matrix-fails-validation": (
        _all(A_CHILD_MATRIX, _write("specs/matrices/base.yaml", "kind: matrix\nid: base\ntrials: lots\n")),
        [("specs/matrices/base.yaml", 3, "E103")],
    ),
    "matrix-yaml-syntax": (
        _all(A_CHILD_MATRIX, _write("specs/matrices/base.yaml", "kind: matrix\nid: base\nagents: [x\n")),
        [("specs/matrices/base.yaml", 4, "E001")],
    ),
    "matrix-wrong-kind": (
        _all(A_CHILD_MATRIX, _write("specs/matrices/base.yaml", "kind: matrx\nid: base\n")),
        [("specs/matrices/base.yaml", 1, "E104")],
    ),
}

UNKNOWN: dict[str, tuple[Callable[[Path], None], list[Where]]] = {
    "check-kind": (_replace(SCENARIO, "kind: lint,", "kind: lnt,"), [(SCENARIO, 11, "E140")]),
    "agent": (
        _replace(DEFAULT, "agents: [scripted-good, scripted-weak]", "agents: [scripted-good, ghost]"),
        [(DEFAULT, 4, "E222")],
    ),
    "agent-extended": (
        _replace("specs/agents/scripted-weak.yaml", "extends: scripted-good", "extends: ghost"),
        [("specs/agents/scripted-weak.yaml", 3, "E120")],
    ),
    "expectation": (
        _replace(SCENARIO, "expectations: [checks-before-finishing]", "expectations: [checks-before-finish]"),
        [(SCENARIO, 13, "E242")],
    ),
    "scenario": (
        _all(
            USES_THE_SCENARIO, _replace("specs/matrices/listed.yaml", "[fix-unused-import]", "[fix-unused]")
        ),
        [("specs/matrices/listed.yaml", 4, "E222")],
    ),
    "matrix-extended": (A_CHILD_MATRIX, [("specs/matrices/child.yaml", 3, "E120")]),
    # A broken spec of one kind hides no unknown name of another kind.
    "scenario-named-like-a-broken-agent": (
        _all(
            USES_THE_SCENARIO,
            _replace("specs/matrices/listed.yaml", "scenarios: [fix-unused-import]", "scenarios: [ghost]"),
            _write("specs/agents/ghost.yaml", "kind: agent\nid: ghost\nadapter: scripted\nrequires: git\n"),
        ),
        [("specs/agents/ghost.yaml", 4, "E103"), ("specs/matrices/listed.yaml", 4, "E222")],
    ),
}


def _errors(root: Path) -> list[Where]:
    done = assay("--project", root, "compile", "--format", "json")
    assert done.returncode == 2, done.stdout + done.stderr
    return [(e["file"], e["line"], e["code"]) for e in json.loads(done.stdout)["errors"]]


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_broken_definition_is_reported_once_at_itself(case: str, tmp_path: Path) -> None:
    project = compiled_copy(tmp_path / "project")
    change, expected = BROKEN[case]
    change(project)
    assert _errors(project) == expected


@pytest.mark.parametrize("case", sorted(UNKNOWN))
def test_a_name_no_file_declares_is_an_error_at_its_use(case: str, tmp_path: Path) -> None:
    project = compiled_copy(tmp_path / "project")
    change, expected = UNKNOWN[case]
    change(project)
    assert _errors(project) == expected
