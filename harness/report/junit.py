"""JUnit XML for CI dashboards: one test case per trial.

A graded failing trial is a `<failure>`, a trial that produced no evidence (failed to run,
ungradeable) is an `<error>`, and an invalid or not yet graded trial is `<skipped>`, so a dashboard
never counts missing evidence as an agent failure. Written as text (escaped with the stdlib's
saxutils) rather than through ElementTree: a 100,000-trial file is then a fraction of a second. The
cases are rendered a block of runs at a time and cached with it (`report.runlist`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from xml.sax.saxutils import escape, quoteattr

from harness.report.summary import RunEntry

KEYS = ("tests", "failures", "errors", "skipped")


def suite_name(run: RunEntry) -> str:
    """The suite a run's test case is in: version/agent/condition."""
    return "/".join(p for p in (run.version, run.agent, run.condition) if p)


def case(name: str, run: RunEntry) -> tuple[str, str | None]:
    """The testcase element and its outcome (failures / errors / skipped / None)."""
    attrs = (
        f"classname={quoteattr(f'{name}.{run.scenario}'.replace('/', '.'))} "
        f"name={quoteattr(f'{run.scenario} trial {run.trial}')} "
        f'time="{run.duration_s or 0.0:.3f}" file={quoteattr(run.dir)}'
    )
    reason = run.reason or ""
    if run.status == "graded" and not run.passed:
        body = f'<failure message={quoteattr(reason or "failed")} type="failed">{escape(run.dir)}</failure>'
        return f"    <testcase {attrs}>\n      {body}\n    </testcase>", "failures"
    if run.status in ("failed_to_run", "ungradeable"):
        body = f"<error message={quoteattr(reason or run.status)} type={quoteattr(run.status)}>{escape(run.dir)}</error>"
        return f"    <testcase {attrs}>\n      {body}\n    </testcase>", "errors"
    if run.status != "graded":
        body = f"<skipped message={quoteattr(f'{run.status}: {reason}')} />"
        return f"    <testcase {attrs}>\n      {body}\n    </testcase>", "skipped"
    if not run.usable:
        body = "<system-out>passed but not usable (error-severity lint finding)</system-out>"
        return f"    <testcase {attrs}>\n      {body}\n    </testcase>", None
    return f"    <testcase {attrs} />", None


Suite = tuple[str, tuple[int, int, int, int], float, Iterable[str]]
"""(name, (tests, failures, errors, skipped), seconds, its test cases' text in pieces, joined by newlines)."""


def document(suites: list[Suite]) -> str:
    """The whole JUnit XML document from its suites, in order."""
    return "".join(pieces(suites))


def pieces(suites: list[Suite]) -> Iterator[str]:
    """The JUnit XML document from its suites, in order, a piece at a time (`document` joined)."""
    totals = [0, 0, 0, 0]
    for _name, counts, _elapsed, _cases in suites:
        totals = [t + c for t, c in zip(totals, counts, strict=True)]
    head = " ".join(f'{k}="{v}"' for k, v in zip(KEYS, totals, strict=True))
    yield f'<?xml version="1.0" encoding="utf-8"?>\n<testsuites name="assay" {head}>\n'
    for name, counts, elapsed, cases in suites:
        attrs = " ".join(f'{k}="{v}"' for k, v in zip(KEYS, counts, strict=True))
        yield f'  <testsuite name={quoteattr(name)} {attrs} time="{elapsed:.3f}">\n'
        for text in cases:
            if text:
                yield text
                yield "\n"
        yield "  </testsuite>\n"
    yield "</testsuites>\n"
