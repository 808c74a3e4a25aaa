"""The one table of check kinds: short name -> "module:Class", loaded by `harness.plugins`.

Kinds load lazily, so a kind's heavy imports cost nothing until a check uses it. An
unknown name lists the valid ones; a name with a dot (`pkg.mod:Class` or
`pkg.mod.Class`) loads an out-of-tree kind.
"""

from __future__ import annotations

from functools import cache

from harness.checks.base import CheckError, CheckKind
from harness.plugins import Plugins

KINDS: dict[str, str] = {
    "command": "harness.checks.command:CommandCheck",
    "contains": "harness.checks.contains:ContainsCheck",
    "absent": "harness.checks.absent:AbsentCheck",
    "answer": "harness.checks.answer:AnswerCheck",
    "file-exists": "harness.checks.file_exists:FileExistsCheck",
    "unchanged": "harness.checks.unchanged:UnchangedCheck",
    "pytest": "harness.checks.pytest_junit:PytestCheck",
    # Kinds that read the run (its trace, event log, transcript, snapshots), added by the grader.
    "trace": "harness.checks.trace:TraceCheck",
    "events": "harness.checks.events:EventsCheck",
    "transcript": "harness.checks.transcript:TranscriptCheck",
    "snapshot": "harness.checks.snapshot:SnapshotCheck",
    "judge": "harness.checks.judge:JudgeCheck",
}


CHECK_KINDS = Plugins("check kind", KINDS, error=CheckError, dotted="pkg.mod:Class")

READ_ONLY_KINDS = frozenset(
    {"contains", "absent", "answer", "file-exists", "unchanged", "trace", "events", "transcript"}
)
"""Kinds that assess in this process by reading only: no command runs in the workspace, and
nothing in it changes, so the grader may assess a run's own workspace without a scratch copy."""


def names() -> list[str]:
    """Every built-in kind name, sorted."""
    return CHECK_KINDS.names()


@cache
def get_kind(name: str) -> CheckKind:
    """The check kind for a short name or a dotted path."""
    kind: CheckKind = CHECK_KINDS.load(name)()
    return kind
