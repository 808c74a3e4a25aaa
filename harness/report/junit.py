"""JUnit XML for CI dashboards: one test case per trial.

A graded failing trial is a `<failure>`, a trial that produced no evidence (failed to run,
ungradeable) is an `<error>`, and an invalid or not yet graded trial is `<skipped>`, so a dashboard
never counts missing evidence as an agent failure.
"""

from __future__ import annotations

from collections import defaultdict
from xml.etree import ElementTree as ET

from harness.report.summary import RunEntry, Summary


def _suite_name(run: RunEntry) -> str:
    return "/".join(p for p in (run.version, run.agent, run.condition) if p)


def render_junit(summary: Summary) -> str:
    """The whole JUnit XML document."""
    suites: dict[str, list[RunEntry]] = defaultdict(list)
    for run in summary.runs:
        suites[_suite_name(run)].append(run)
    root = ET.Element("testsuites", name="assay")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for name in sorted(suites):
        runs = suites[name]
        suite = ET.SubElement(root, "testsuite", name=name)
        counts = {"tests": len(runs), "failures": 0, "errors": 0, "skipped": 0}
        elapsed = 0.0
        for run in runs:
            case = ET.SubElement(
                suite,
                "testcase",
                classname=f"{name}.{run.scenario}".replace("/", "."),
                name=f"{run.scenario} trial {run.trial}",
                time=f"{run.duration_s or 0.0:.3f}",
                file=run.dir,
            )
            elapsed += run.duration_s or 0.0
            reason = run.reason or ""
            if run.status == "graded" and not run.passed:
                counts["failures"] += 1
                ET.SubElement(case, "failure", message=reason or "failed", type="failed").text = run.dir
            elif run.status in ("failed_to_run", "ungradeable"):
                counts["errors"] += 1
                ET.SubElement(case, "error", message=reason or run.status, type=run.status).text = run.dir
            elif run.status != "graded":
                counts["skipped"] += 1
                ET.SubElement(case, "skipped", message=f"{run.status}: {reason}")
            elif not run.usable:
                ET.SubElement(case, "system-out").text = "passed but not usable (error-severity lint finding)"
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value
        suite.set("time", f"{elapsed:.3f}")
    for key, value in totals.items():
        root.set(key, str(value))
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
