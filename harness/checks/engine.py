"""Run a scenario's checks on one workspace: one outcome per check, in declaration order.

Validation (reference, seed, negatives) and grading both call `run_checks`, so a check
means the same thing in both places.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from pathlib import Path

from compiler.contract import CheckSpec
from harness.artifacts.records import CaseOutcome, CheckOutcome
from harness.checks import batching
from harness.checks.base import CheckContext, CheckError, CheckUnavailable, unplace
from harness.checks.registry import get_kind

_VOLATILE = (
    # "1 failed in 0.08s", "took 1.2 s": wall-clock figures in a tool's output
    (re.compile(r"\b(in|took) \d+(?:\.\d+)? ?m?s\b"), r"\1 <time>"),
    # object addresses in Python reprs
    (re.compile(r"\b0x[0-9a-f]{6,}\b"), "0x<addr>"),
    # ... and the tail of one that an output was cut into ("…4877e0>", pytest's "obje...7f38a5490>")
    (re.compile(r"(\.\.\.|…)[0-9a-f]{1,16}>"), r"\1<addr>>"),
)


def scrub(text: str, scratch: Path) -> str:
    """A message without what changes from one grading to the next of the same run.

    The scratch folder's path becomes `$WORKSPACE`; durations and object addresses in a
    tool's output are masked, so regrading an unchanged run gives an identical grade.
    """
    text = unplace(text, scratch)
    for pattern, replacement in _VOLATILE:
        text = pattern.sub(replacement, text)
    return text


def scrub_outcome(outcome: CheckOutcome, scratch: Path) -> CheckOutcome:
    """A check outcome whose message does not name the scratch copy."""
    cleaned = scrub(outcome.message, scratch)
    return outcome if cleaned == outcome.message else outcome.model_copy(update={"message": cleaned})


def run_check(spec: CheckSpec, workspace: Path, ctx: CheckContext) -> CheckOutcome:
    """One check's outcome: pass, fail, error (it could not run) or unavailable."""
    started = time.monotonic()
    outcome: str
    tests: tuple[CaseOutcome, ...] = ()
    try:
        verdict = get_kind(spec.kind).run(spec, workspace, ctx)
        outcome, message, tests = ("pass" if verdict.passed else "fail"), verdict.message, verdict.tests
    except CheckError as exc:
        outcome, message = "error", str(exc)
    except CheckUnavailable as exc:
        outcome, message = "unavailable", str(exc)
    except (OSError, ValueError, TypeError, KeyError, RecursionError) as exc:
        # A check that trips over the workspace (unreadable file, odd parameter type, JSON the
        # agent nested too deeply to parse) must not take the other checks of the run down with
        # it, nor the run out of the rates; it reports that it could not run.
        outcome, message = "error", f"{type(exc).__name__}: {exc}"
    return CheckOutcome(
        id=spec.id,
        kind=spec.source_kind or spec.kind,
        layer=spec.layer,
        outcome=outcome,
        message=message,
        authority=spec.authority,
        duration_s=round(time.monotonic() - started, 3),
        tests=tests,
    )


def run_checks(
    checks: Sequence[CheckSpec], workspace: Path, ctx: CheckContext | None = None
) -> list[CheckOutcome]:
    """Every check's outcome on the workspace, in the order given.

    The commands of the checks that run one go first, together in one launch, each on the
    workspace as it was given (`harness.checks.batching`); then every check is judged in order.
    """
    context = ctx or CheckContext()
    ran = batching.prerun(checks, workspace, context)
    outcomes: list[CheckOutcome] = []
    for n, spec in enumerate(checks):
        if n not in ran:
            outcomes.append(run_check(spec, workspace, context))
            continue
        call, done = ran[n]
        outcome = run_check(spec, workspace, batching.replay(context, call, done))
        spent = outcome.duration_s + (done.duration_s or 0.0)
        outcomes.append(outcome.model_copy(update={"duration_s": round(spent, 3)}))
    return outcomes
