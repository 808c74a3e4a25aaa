"""From specs to the headline through the real pieces: `assay compile`, `assay matrix` (the runner, the
scripted agent, the oracle), the grader pricing usage from specs/prices.yaml, and `assay report`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import BARE_ENV, assay

pytest.importorskip("harness.grade", reason="the grader (harness.grade) is not installed")

from tests.grade.project import ADD_ONE_FILES, compile_project
from tests.grade.project import PROJECT as BASE_PROJECT

# The grader tests' small project with a second tool level, "hint", which the scripted agent reads.
PROJECT = BASE_PROJECT.replace("  tool:\n    none: {}\n", "  tool:\n    none: {}\n    hint: {}\n")
assert "hint: {}" in PROJECT
SCRIPT = """\
seed: 3
steps:
  - when: { level: { tool: hint } }
    write: { path: app/main.py, content: "def handler(x):\\n    return x + 1\\n" }
  - when: { level: { tool: none }, chance: 0.4 }
    write: { path: app/main.py, content: "def handler(x):\\n    return x + 1\\n" }
  - say: done
"""
FILES = {
    "specs/project.yaml": PROJECT,
    "specs/agents/scripted.yaml": "kind: agent\nid: scripted\nadapter: scripted\nargs: { script: agents/s.yaml }\n",
    "specs/agents/oracle.yaml": "kind: agent\nid: oracle\nadapter: oracle\nsanity: pass\n",
    "agents/s.yaml": SCRIPT,
    "specs/prices.yaml": "kind: prices\nversion: t-1\nmodels:\n  scripted: { input: 1.0, output: 2.0 }\n",
    "specs/matrices/default.yaml": (
        "kind: matrix\nid: default\ndefault: true\nagents: [scripted, oracle]\ntrials: 3\n"
        "exclude:\n  - { agent: oracle, tool: hint }\noptions: { isolation: none, infra_retries: 0 }\n"
    ),
    **ADD_ONE_FILES,
}


def test_headline_in_money_and_the_oracle_as_a_sanity_bound(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    compile_project(root)
    ran = assay(
        "--project", root, "matrix", "default", "--runs", "runs", "--parallel", "2", cwd=root, env=BARE_ENV
    )
    assert ran.returncode in (0, 1), ran.stderr  # 1: some trials failed their checks, as scripted
    report = assay("--project", root, "report", "runs", "--out", "out", cwd=root, env=BARE_ENV)
    assert report.returncode == 0, report.stderr
    summary = json.loads((root / "out" / "summary.json").read_text())
    assert summary["header"]["sanity"] == {"oracle": "pass"}
    assert {u["agent"] for u in summary["uplifts"]} == {"scripted"}
    (line,) = summary["headline"]
    assert line["unit"] == "usd" and line["treatment"] == "hint/none/off"
    assert line["text"].startswith("scripted, hint/none/off against the control none/none/off: ")
    assert " more per run ($" in line["text"] or " less per run ($" in line["text"]
    costs = [
        g["cost"]["cost_per_run"]
        for g in summary["groups"]
        if g["by"] == "condition" and g["agent"] == "scripted"
    ]
    assert len(costs) == 2 and all(c and c > 0 for c in costs)
    # The terminal and report.md open with the same sentence.
    assert report.stdout.startswith(f"- {line['text']}\n")
    assert (
        (root / "out" / "report.md")
        .read_text()
        .startswith(f"# assay report\n\n## Headline\n\n- {line['text']}\n")
    )
    assert "headroom" not in report.stdout  # the oracle's 3/3 is its job
