"""Must-show #3: breaking a reference, a negative or a seed makes `assay validate` exit 1
with a message naming the scenario, the overlay and the check."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.helpers import assay

SCENARIO = "triage-name-error"


def scenario_dir(project: Path) -> Path:
    return project / "scenarios" / SCENARIO


def test_the_untouched_scenario_is_valid(project: Path) -> None:
    ran = assay("--project", project, "validate")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "1 scenario(s), 5 workspaces" in ran.stdout and ": valid;" in ran.stdout
    assert "triage-name-error  answer-file     wrong-file" in ran.stdout


def test_a_broken_reference(project: Path) -> None:
    (scenario_dir(project) / "reference" / "answer.json").write_text(
        json.dumps({"file": "ledger/importer.py", "name": "account"})
    )
    ran = assay("--project", project, "validate")
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert (
        "error: triage-name-error [reference] check answer-name: the reference fails it (agent layer): "
        'name = "account", expected "acount"'
    ) in ran.stdout
    # The fixes-code negative is laid over the reference, so it inherits the broken answer.
    assert (
        "error: triage-name-error [negative fixes-code] check answer-name: fails, but the negative"
        in ran.stdout
    )
    assert "INVALID (2 problem(s))" in ran.stdout


def test_a_negative_that_fails_an_unnamed_check(project: Path) -> None:
    (scenario_dir(project) / "negatives" / "wrong-file" / "answer.json").write_text(
        json.dumps({"file": "ledger/cli.py", "name": "total"})
    )
    ran = assay("--project", project, "validate")
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert (
        "error: triage-name-error [negative wrong-file] check answer-name: fails, but the negative does not "
        'name it: name = "total", expected "acount"'
    ) in ran.stdout


def test_a_negative_that_passes_a_named_check(project: Path) -> None:
    (scenario_dir(project) / "negatives" / "wrong-name" / "answer.json").write_text(
        json.dumps({"file": "ledger/importer.py", "name": "acount"})
    )
    ran = assay("--project", project, "validate")
    assert ran.returncode == 1
    assert (
        "error: triage-name-error [negative wrong-name] check answer-name: passes, but the negative names it"
        in ran.stdout
    )


def test_a_seed_that_passes_everything(project: Path) -> None:
    (scenario_dir(project) / "seed" / "answer.json").write_text(
        json.dumps({"file": "ledger/importer.py", "name": "acount"})
    )
    ran = assay("--project", project, "validate")
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert (
        "error: triage-name-error [seed]: the untouched seed passes every check (answer-file, answer-name, "
        "code-untouched)"
    ) in ran.stdout


def test_uncovered_check_is_a_warning_then_an_error_with_strict(project: Path) -> None:
    spec = scenario_dir(project) / "scenario.yaml"
    spec.write_text(
        spec.read_text().replace(
            "negatives:\n",
            "  - { id: has-tests, kind: file-exists, path: tests/test_book.py }\nnegatives:\n",
        )
    )
    ran = assay("--project", project, "validate")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "warning: triage-name-error [coverage] check has-tests: no negative fails this check" in ran.stdout
    assert "has-tests       -- none --" in ran.stdout
    # Observed failures beside the declared ones: the untouched seed fails the answer checks too.
    assert "declared: negatives that name each check; observed: what failed it" in ran.stdout
    assert re.search(r"triage-name-error\s+answer-file\s+wrong-file\s+seed, wrong-file\n", ran.stdout)
    strict = assay("--project", project, "validate", "--strict")
    assert strict.returncode == 1
    assert (
        "error: triage-name-error [coverage] check has-tests: no negative fails this check" in strict.stdout
    )


def test_flaky_check(project: Path) -> None:
    spec = scenario_dir(project) / "scenario.yaml"
    spec.write_text(
        spec.read_text().replace(
            "negatives:\n",
            '  - { id: first-time-only, kind: command, run: "test ! -e .seen && touch .seen" }\nnegatives:\n'
            "  misses-marker: { fails: [first-time-only], patch: negatives/marker.patch }\n",
        )
    )
    (scenario_dir(project) / "negatives" / "marker.patch").write_text(
        "--- /dev/null\n+++ b/.seen\n@@ -0,0 +1 @@\n+x\n"
    )
    ran = assay("--project", project, "validate", "--format", "json")
    assert ran.returncode == 1, ran.stdout + ran.stderr
    report = json.loads(ran.stdout)
    flaky = {(p["overlay"], p["check"]) for p in report["problems"] if p["kind"] == "flaky"}
    assert ("reference", "first-time-only") in flaky and ("seed", "first-time-only") in flaky
    assert ("negative misses-marker", "first-time-only") not in flaky
    assert report["scenarios"][0]["coverage"]["first-time-only"] == ["misses-marker"]
    assert report["scenarios"][0]["observed"]["first-time-only"] == ["misses-marker"]


def test_spec_error_exits_2_and_unknown_scenario_is_a_usage_error(project: Path) -> None:
    assert assay("--project", project, "validate", "--scenario", "nope").returncode == 2
    spec = scenario_dir(project) / "scenario.yaml"
    spec.write_text(spec.read_text().replace("family: triage", "family: triage\nfamilly: x"))
    ran = assay("--project", project, "validate")
    assert ran.returncode == 2
    assert "scenario.yaml" in ran.stderr and "familly" in ran.stderr
