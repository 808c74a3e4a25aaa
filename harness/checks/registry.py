"""The one table of check kinds: short name -> "module:Class".

Kinds load lazily, so a kind's heavy imports cost nothing until a check uses it. An
unknown name lists the valid ones; a name with a dot (`pkg.mod:Class` or
`pkg.mod.Class`) loads an out-of-tree kind. The run-reading kinds (trace, events,
transcript, snapshot, judge) are added to this table by the grader.
"""

from __future__ import annotations

import importlib
from functools import cache

from harness.checks.base import CheckError, CheckKind

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


def names() -> list[str]:
    """Every built-in kind name, sorted."""
    return sorted(KINDS)


@cache
def get_kind(name: str) -> CheckKind:
    """The check kind for a short name or a dotted path."""
    target = KINDS.get(name)
    if target is None:
        if "." not in name and ":" not in name:
            raise CheckError(
                f"unknown check kind {name!r}; known kinds: {', '.join(names())} (or a dotted path)"
            )
        target = name
    module_name, _, attr = target.partition(":") if ":" in target else target.rpartition(".")
    try:
        module = importlib.import_module(module_name)
        factory = getattr(module, attr)
    except (ImportError, AttributeError) as exc:
        raise CheckError(f"cannot load check kind {name!r} from {target!r}: {exc}") from None
    kind: CheckKind = factory()
    return kind
