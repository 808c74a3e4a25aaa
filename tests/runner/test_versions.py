"""Version comparisons: build each version, nest the run tree under its label, versions.json, the report's delta table."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.batch.versions import VersionError, pair
from tests.helpers import assay

ROOT = Path(__file__).resolve().parents[2]
PARTS = ("specs", "scenarios", "tools", "guides", "wiki")


def test_pair_names_baseline_and_candidate() -> None:
    sides = {"candidate": {"label": "new"}, "baseline": {"label": "old"}}
    assert pair(sides) == ("old", "new")
    assert pair({"a": {"label": "x"}, "b": {"label": "y"}}) == ("x", "y")
    with pytest.raises(VersionError, match="baseline"):
        pair({"a": {"label": "x"}, "b": {"label": "y"}, "c": {"label": "z"}})


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not (ROOT / "specs" / "matrices" / "demo-versions.yaml").is_file():
        pytest.skip("the example suite's version comparison is not in this checkout")
    project = tmp_path_factory.mktemp("suite")
    for part in PARTS:
        shutil.copytree(ROOT / part, project / part)
    done = assay("--project", project, "compile")
    assert done.returncode == 0, done.stderr
    return project


@pytest.mark.slow
def test_demo_versions_builds_nests_records_and_reports(suite: Path) -> None:
    runs = suite / "runs"
    done = assay(
        "--project",
        suite,
        "matrix",
        "demo-versions",
        "--trials",
        "1",
        "--scenario",
        "trap-cookie-samesite",
        "--runs",
        str(runs),
    )
    assert done.returncode == 0, done.stderr
    tree = runs / "demo-versions"
    record = json.loads((tree / "versions.json").read_text())
    assert (record["baseline"], record["candidate"]) == ("memo-2-0", "memo-2-1")
    assert record["versions"]["memo-2-1"]["path"] == "build/memo-2.1"
    # each build exists, and each side ran its own: 2.1 no longer finds the lower-cased word
    assert 'VERSION = "2.1"' in (suite / "build" / "memo-2.1" / "memo").read_text()
    exits = {}
    for label in ("memo-2-0", "memo-2-1"):
        trial = (
            tree / label / "trap-cookie-samesite" / "scripted-good" / "none" / "memory" / "off" / "trial-01"
        )
        assert json.loads((trial / "run.json").read_text())["version"] == label
        rows = [json.loads(line) for line in (trial / "trace.jsonl").read_text().splitlines()]
        exits[label] = [r["exit"] for r in rows if r["argv"][:2] == ["memo", "search"]]
    assert exits == {"memo-2-0": [0], "memo-2-1": [1]}
    done = assay("--project", suite, "report", str(tree), "--out", str(tree), "--format", "md")
    assert done.returncode in (0, 1), done.stderr
    assert "version comparison memo-2-0 -> memo-2-1" in done.stdout + done.stderr
    report = (tree / "report.md").read_text()
    assert "## Version comparison: memo-2-0 → memo-2-1" in report
    assert "| agent | control @memo-2-0 | control @memo-2-1 | drift" in report


def test_a_failing_build_stops_the_matrix_before_any_trial(suite: Path, tmp_path: Path) -> None:
    spec = suite / "specs" / "matrices" / "demo-versions.yaml"
    original = spec.read_text()
    try:
        spec.write_text(original.replace("--version 2.1 --out", "--version 9.9 --out"))
        assert assay("--project", suite, "compile").returncode == 0
        done = assay(
            "--project", suite, "matrix", "demo-versions", "--trials", "1", "--runs", str(tmp_path / "runs")
        )
        assert done.returncode == 1
        assert "building version 'memo-2-1' failed" in done.stderr
        assert not list((tmp_path / "runs").rglob("run.json"))
    finally:
        spec.write_text(original)
        assay("--project", suite, "compile")


@pytest.mark.slow
def test_a_package_version_is_installed_and_put_on_path(suite: Path, tmp_path: Path) -> None:
    """`package:` (here a local wheel, so no index is needed): pip-installed once, run in the sandbox."""
    done = subprocess.run(
        [sys.executable, "tools/memory/build.py", "--version", "2.1", "--out", "dist", "--wheel"],
        cwd=suite,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    spec = suite / "specs" / "matrices" / "demo-versions.yaml"
    original = spec.read_text()
    try:
        candidate = next(line for line in original.splitlines() if line.startswith("  candidate:"))
        spec.write_text(
            original.replace(
                candidate, '  candidate: { label: memo-2-1, package: "dist/memo_tool-2.1-py3-none-any.whl" }'
            )
        )
        assert assay("--project", suite, "compile").returncode == 0
        runs = tmp_path / "runs"
        args = (
            "matrix",
            "demo-versions",
            "--trials",
            "1",
            "--scenario",
            "trap-cookie-samesite",
            "--cell",
            "none/memory/off",
            "--runs",
            str(runs),
        )
        done = assay("--project", suite, *args)
        assert done.returncode == 0, done.stderr
        installed = suite / ".cache" / "versions" / "memo-2-1"
        assert (installed / ".package").read_text() == "dist/memo_tool-2.1-py3-none-any.whl"
        record = json.loads((runs / "demo-versions" / "versions.json").read_text())
        assert record["versions"]["memo-2-1"]["path"] == ".cache/versions/memo-2-1"
        trial = (
            runs
            / "demo-versions"
            / "memo-2-1"
            / "trap-cookie-samesite"
            / "scripted-good"
            / "none"
            / "memory"
            / "off"
            / "trial-01"
        )
        rows = [json.loads(line) for line in (trial / "trace.jsonl").read_text().splitlines()]
        assert [r["exit"] for r in rows if r["argv"][:2] == ["memo", "search"]] == [
            1
        ]  # 2.1's search, in the sandbox
        mtime = (installed / ".package").stat().st_mtime_ns
        assert assay("--project", suite, *args, "--force").returncode == 0
        assert (installed / ".package").stat().st_mtime_ns == mtime  # installed once, reused
    finally:
        spec.write_text(original)
        assay("--project", suite, "compile")
