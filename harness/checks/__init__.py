"""The check engine shared by validation and grading.

`run_checks(checks, workspace, ctx)` returns one `CheckOutcome` per `CheckSpec`. Kinds
are chosen by name from `registry.KINDS`; see `base.CheckKind` for the plug-in shape.
"""

from __future__ import annotations

from harness.checks.base import CheckContext, CheckError, CheckKind, CheckUnavailable, Verdict
from harness.checks.engine import run_check, run_checks
from harness.checks.registry import KINDS, get_kind

__all__ = [
    "KINDS",
    "CheckContext",
    "CheckError",
    "CheckKind",
    "CheckUnavailable",
    "Verdict",
    "get_kind",
    "run_check",
    "run_checks",
]
