"""Every invalid spec under tests/fixtures/specs/invalid/<case>/ fails with exactly expected.txt.

Each case is an overlay on the valid base project (tests/compiler/corpus.py).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from compiler.errors import SpecErrors
from compiler.pipeline import build
from tests.compiler.corpus import BASE, CASES, INVALID, materialise, overlay_files
from tests.helpers import assay

LINE = re.compile(
    r"^(?P<file>[^:\s]+):(?P<line>\d+):(?P<col>\d+): error\[E\d{3}\]: (?P<path>[^:]+?): (?P<msg>.+)$"
)


def test_corpus_is_large_enough() -> None:
    assert len(CASES) >= 30


def test_base_is_valid() -> None:
    plan = build(BASE)  # raises SpecErrors when the base is not valid
    assert plan.default is not None and plan.matrices[plan.default].runs


@pytest.mark.parametrize("case", CASES)
def test_case_is_a_minimal_overlay(case: str) -> None:
    """A case holds only what differs from the base: a copied base file would hide a base change."""
    for rel in overlay_files(case):
        base = BASE / rel
        assert not (base.is_file() and base.read_bytes() == (INVALID / case / rel).read_bytes()), rel


@pytest.mark.parametrize("case", CASES)
def test_invalid_case(case: str, tmp_path: Path) -> None:
    folder = materialise(case, tmp_path / case)
    expected = (INVALID / case / "expected.txt").read_text(encoding="utf-8")
    with pytest.raises(SpecErrors) as info:
        build(folder)
    got = "\n".join(e.text() for e in info.value.errors) + "\n"
    assert got == expected
    heads = [line for line in expected.splitlines() if not line.startswith("  hint: ")]
    assert heads, "a case must expect at least one error"
    for line in heads:
        m = LINE.match(line)
        assert m, line
        assert (folder / m["file"]).exists() or m["file"] == "specs/project.yaml"


def test_cli_exit_2_and_formats(tmp_path: Path) -> None:
    case = materialise("negatives-wrong", tmp_path / "case")
    text = assay("--project", case, "compile", "--out", str(tmp_path / "g"))
    assert text.returncode == 2
    assert text.stderr == (INVALID / "negatives-wrong" / "expected.txt").read_text() + "4 error(s)\n"
    assert not (tmp_path / "g").exists()
    as_json = assay("--project", case, "compile", "--format", "json", "--out", str(tmp_path / "g"))
    errors = json.loads(as_json.stdout)["errors"]
    assert as_json.returncode == 2
    assert [e["code"] for e in errors] == ["E234", "E240", "E241", "E233"]
    assert errors[1]["path"] == "negatives.silent.fails[0]" and errors[1]["hint"] == "did you mean 'greets'?"
    github = assay("--project", case, "compile", "--format", "github", "--out", str(tmp_path / "g"))
    first = github.stdout.splitlines()[1]
    assert first.startswith("::error file=scenarios/greet/scenario.yaml,line=12,col=21,title=E240::")


def test_cli_check_json_and_schema_drift(tmp_path: Path) -> None:
    valid = INVALID.parent / "valid"
    check = assay("--project", valid, "compile", "--check")
    assert check.returncode == 0 and "specs are valid (2 scenarios, 18 trials)" in check.stdout
    done = assay("--project", valid, "compile", "--format", "json", "--out", str(tmp_path / "g"))
    summary = json.loads(done.stdout)
    assert (summary["up_to_date"], summary["trials"], summary["matrices"]) == (
        False,
        18,
        {"default": 16, "smoke": 2},
    )
    assert json.loads(
        assay("--project", valid, "compile", "--format", "json", "--out", str(tmp_path / "g")).stdout
    )["up_to_date"]
    out = tmp_path / "schema"
    assert assay("--project", valid, "schema", "--out", str(out)).returncode == 0
    assert assay("--project", valid, "schema", "--check", "--out", str(out)).returncode == 0
    (out / "agent.json").write_text("{}\n")
    drift = assay("--project", valid, "schema", "--check", "--out", str(out))
    assert drift.returncode == 1 and "agent.json is stale" in drift.stderr
