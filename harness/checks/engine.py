"""Run a scenario's checks on one workspace: one outcome per check, in declaration order.

Validation (reference, seed, negatives) and grading both call `run_checks`, so a check
means the same thing in both places.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from compiler.contract import CheckSpec
from harness.artifacts.records import CaseOutcome, CheckOutcome
from harness.checks.base import CheckContext, CheckError, CheckUnavailable
from harness.checks.registry import get_kind


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
    except (OSError, ValueError, TypeError, KeyError) as exc:
        # A check that trips over the workspace (unreadable file, odd parameter type) must
        # not take the other checks of the run down with it; it reports that it could not run.
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
    """Every check's outcome on the workspace, in the order given."""
    context = ctx or CheckContext()
    return [run_check(spec, workspace, context) for spec in checks]
