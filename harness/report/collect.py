"""Stream a run tree: one `RunFacts` at a time, never every transcript in memory.

Runs are found by manifest (a directory holding run.json), not by depth, like
`harness.artifacts.run_tree.find_runs`; this walker yields as it goes instead of building the list, and
reads only run.json, grade.json and, once per scenario, job.json (family and split). Transcripts,
logs and workspaces are never opened: the report only links to them.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

from pydantic import BaseModel, ValidationError

from harness.artifacts.index_rows import Scenarios
from harness.artifacts.names import (
    AGENT_LOG,
    DIFF_FILE,
    GRADE_FILE,
    RUN_FILE,
    TRANSCRIPT_FILE,
    VIEW_FILE,
)
from harness.artifacts.records import GRADE_SCHEMA, RUN_SCHEMA, Grade, RunRecord, RunStatus, read_grade
from harness.artifacts.store import FutureSchemaError, read_record
from harness.errors import UsageError
from harness.report.sections import SectionDigest, digest
from harness.report.walk import walk_runs

M = TypeVar("M", bound=BaseModel)

ARTIFACTS = (VIEW_FILE, DIFF_FILE, TRANSCRIPT_FILE, AGENT_LOG)
SECTIONS = ("tool_use", "friction", "expectations", "disagreement", "authorities")
TOKEN_KINDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")

USAGE_METRICS = (
    ("turns", "turns"),
    ("input", "input_tokens"),
    ("output", "output_tokens"),
    ("cache_read", "cache_read_tokens"),
    ("cache_write", "cache_write_tokens"),
    ("reasoning", "reasoning_tokens"),
    ("peak_context", "peak_context"),
    ("context_limit", "context_limit"),
    ("peak_context_share", "peak_context_share"),
    ("tokens_to_first_valid", "tokens_to_first_valid"),
    ("cost_usd", "cost_usd"),
)
"""grade.usage field -> metric name (the runner's names), merged where the runner left a gap."""


@dataclass(frozen=True, slots=True)
class RegradeChange:
    """What a regrade changed on the same stored workspace."""

    before_passed: bool
    before_usable: bool
    flipped_checks: tuple[str, ...]
    grader_changed: bool


class CheckFacts(NamedTuple):
    """One check's verdict as the aggregates need it."""

    id: str
    kind: str
    layer: str
    outcome: str
    tests: tuple[tuple[str, str], ...]
    """(test id, outcome) per test of a check that runs a test suite."""


@dataclass(frozen=True, slots=True)
class RunFacts:
    """Everything the aggregator needs from one run directory."""

    dir: str
    version: str | None
    scenario: str
    agent: str
    condition: str
    levels: tuple[tuple[str, str], ...]
    control: bool
    trial: int
    family: str | None
    split: str | None
    status: str
    passed: bool
    usable: bool
    reason: str | None
    exit_code: int | None
    infra_retries: int
    metrics: dict[str, float]
    checks: tuple[CheckFacts, ...]
    """The grade's checks (empty when there is no grade)."""
    failed_layers: tuple[str, ...]
    sections: dict[str, Any]
    artifacts: tuple[str, ...]
    regrade: RegradeChange | None
    sanity: str | None = None
    """`pass` / `fail` when the agent is a sanity bound (run.json `sanity`), else None."""
    concurrent: bool = False
    """Ran alongside sibling trials (run.json `concurrent`): its wall-clock carries their contention."""
    digest: SectionDigest | None = None
    """The sections as the aggregates read them (computed once; a cached run carries only this)."""
    limits_hit: tuple[str, ...] = ()
    """Resource limits the run hit (run.json `limits_hit`)."""
    unprotected: tuple[str, ...] = ()
    """Sandbox protections that did not hold for the run (run.json `protections.failed`)."""
    usage_differs: tuple[str, ...] = ()
    """Totals on which the adapter's usage report differs from the gateway's (grade `usage.adapter_differs`)."""
    agent_end: str | None = None
    """`AgentEnd.cause` when the agent's own doing ended the run (graded all the same), else None."""
    context_advisory: bool = False
    """context.json named unexpected context or was unreadable (advisory: shown, never an exclusion)."""
    unsafe_edits: int = 0
    """Files the agent changed outside the scenario's `writable` (run.json `unsafe_edits_count`)."""
    unpriced: str | None = None
    """Why a run with usage has no cost (grade `usage.price_table`: a model the table lacks), else None."""

    @property
    def tokens(self) -> float | None:
        return self.metrics.get("tokens")

    @property
    def cost(self) -> float | None:
        return self.metrics.get("cost_usd")


@dataclass(frozen=True, slots=True)
class Unreadable:
    """A run directory whose run.json could not be read: counted and listed, never guessed at."""

    dir: str
    reason: str


def _brief(exc: BaseException) -> str:
    return " ".join(str(exc).split("\n")[:2])[:200]


def _read(path: str, model: type[M], current: int) -> M:
    """Parse a record with pydantic's JSON parser (the hot path); the contract reader explains failures."""
    try:
        with open(path, "rb") as fh:
            record = model.model_validate_json(fh.read())
    except ValidationError:
        return read_record(Path(path), model, current)  # raises FutureSchemaError or the validation error
    if getattr(record, "schema_version", 0) > current:
        return read_record(Path(path), model, current)
    return record


def grade_section(grade: Grade, name: str) -> Any:
    """A grade section whether the grader typed it as a field or left it in `details`.

    A typed section that only holds its defaults (a tool_use with `present: false`, friction of a run
    with no trace) is no evidence and reads as absent, so a real zero is told apart from "not measured".
    """
    value = getattr(grade, name) if name in type(grade).model_fields else None
    if isinstance(value, BaseModel):
        if name in ("tool_use", "friction"):
            tool_use = getattr(grade, "tool_use", None)
            if tool_use is not None and getattr(tool_use, "present", True) is False:
                value = None
        if value is not None:
            return value.model_dump(mode="json", exclude={"present"})
    if not value:
        value = grade.details.get(name)
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, tuple):
        return [v.model_dump(mode="json") if isinstance(v, BaseModel) else v for v in value]
    if isinstance(value, dict):
        return {k: v.model_dump(mode="json") if isinstance(v, BaseModel) else v for k, v in value.items()}
    return value


def run_metrics(run: RunRecord, grade: Grade | None) -> dict[str, float]:
    """Runner and grader halves merged field by field (a real zero stays zero), plus total tokens."""
    out: dict[str, float] = {}
    for name, value in run.metrics.__dict__.items():
        if isinstance(value, int | float) and not isinstance(value, bool):
            out[name] = float(value)
    if grade is not None:
        for name, value in grade.metrics.items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                out.setdefault(name, float(value))
        usage = grade.usage
        if usage.present:
            for field_name, metric in USAGE_METRICS:
                value = getattr(usage, field_name, None)
                if isinstance(value, int | float) and not isinstance(value, bool):
                    if metric == "cost_usd":
                        out[metric] = float(value)  # priced by the grader from the pinned table
                    else:
                        out.setdefault(metric, float(value))
        snapshots = grade.snapshots
        if snapshots.count:
            out.setdefault("snapshots", float(snapshots.count))
            out.setdefault("snapshot_regressions", float(len(snapshots.regressions)))
            if snapshots.first_valid is not None:
                out.setdefault("first_valid_snapshot", float(snapshots.first_valid))
        tool_use = grade.tool_use
        if tool_use.present:
            out.setdefault("tool_invocations", float(tool_use.invocations))
            out.setdefault("tool_failures", float(tool_use.failures))
            out.setdefault("tool_est_output_tokens", float(tool_use.est_output_tokens))
    kinds = [out[k] for k in TOKEN_KINDS if k in out]
    if kinds:
        out["tokens"] = sum(kinds)
    return out


def load_grader() -> Callable[..., object] | None:
    """`harness.grade.grade_run` when the grader is installed, else None."""
    try:
        module = importlib.import_module("harness.grade")
    except ModuleNotFoundError as exc:
        if exc.name in ("harness.grade",):
            return None
        raise
    fn = getattr(module, "grade_run", None)
    return fn if callable(fn) else None


def _status(run: RunRecord, grade: Grade | None) -> tuple[str, str | None]:
    invalid = run.invalid or (grade.invalid if grade else None)
    if invalid:
        return "invalid", invalid
    if grade is None:
        if run.error or run.interrupted:
            return "failed_to_run", run.error or "interrupted (rerun on resume)"
        return "ungraded", "no grade.json"
    if grade.status is RunStatus.GRADED:
        failed = [c.id for c in grade.checks if c.outcome != "pass"]
        end = run.agent_end or grade.agent_end  # the agent's own doing: in the rates, said beside them
        said = ["failed: " + ", ".join(failed)] if failed else []
        said += [end.detail + (f" (step {end.step})" if end.step else "")] if end is not None else []
        return "graded", "; ".join(said) or None
    return grade.status.value, grade.error or run.error


def _flips(before: Grade, after: Grade) -> tuple[str, ...]:
    old = {c.id: c.outcome for c in before.checks}
    return tuple(sorted(c.id for c in after.checks if c.id in old and old[c.id] != c.outcome))


def collect(
    root: Path, *, regrade: bool = False, project: Path | None = None, starts: list[str] | None = None
) -> Iterator[RunFacts | Unreadable]:
    """Yield one RunFacts per run under root (Unreadable for a corrupt run.json); with regrade,
    grade every run again first. A record from a newer assay stops the report (FutureSchemaError)."""
    grader = load_grader()
    if regrade and grader is None:
        raise UsageError("--regrade needs the grader (harness.grade.grade_run), which is not installed")
    info = Scenarios()
    prefix = len(str(root).rstrip(os.sep)) + 1
    for run_dir, files in walk_runs(root, starts):
        rel = run_dir[prefix:].replace(os.sep, "/")
        try:
            run = _read(os.path.join(run_dir, RUN_FILE), RunRecord, RUN_SCHEMA)
        except FutureSchemaError:
            raise
        except (OSError, ValueError) as exc:  # one corrupt manifest must not sink the whole report
            yield Unreadable(rel, f"run.json: {_brief(exc)}")
            continue
        grade: Grade | None = None
        grade_error: str | None = None
        if GRADE_FILE in files:
            try:
                grade = _read(os.path.join(run_dir, GRADE_FILE), Grade, GRADE_SCHEMA)
            except FutureSchemaError:
                raise
            except (OSError, ValueError) as exc:
                grade_error = f"unreadable grade.json: {_brief(exc)}"
        change: RegradeChange | None = None
        if grader is not None and (regrade or (grade is None and grade_error is None)):
            before = grade
            try:
                grader(Path(run_dir), project=project, regrade=regrade)
                grade = read_grade(Path(run_dir))
                grade_error = None
            except FutureSchemaError:
                raise
            except (
                Exception
            ) as exc:  # per-run boundary: one run the grader cannot handle is data, not the end of the report
                grade, grade_error = None, f"grader error: {type(exc).__name__}: {_brief(exc)}"
            if before is not None and grade is not None:
                change = RegradeChange(
                    before.passed,
                    before.usable,
                    _flips(before, grade),
                    before.grader_hash != grade.grader_hash,
                )
        family, split = info.lookup(run.scenario, run_dir, files)
        yield run_facts(
            rel, run, grade, grade_error, family, split, tuple(a for a in ARTIFACTS if a in files), change
        )


def run_facts(
    rel: str,
    run: RunRecord,
    grade: Grade | None,
    grade_error: str | None,
    family: str | None,
    split: str | None,
    artifacts: tuple[str, ...],
    change: RegradeChange | None = None,
) -> RunFacts:
    """What the aggregates take from one run's records, however they were read (walk or index)."""
    status, reason = ("ungradeable", grade_error) if grade_error else _status(run, grade)
    sections: dict[str, Any] = {}
    if grade is not None:
        for name in SECTIONS:
            value = grade_section(grade, name)
            if value:
                sections[name] = value
    graded = status == "graded" and grade is not None
    end = run.agent_end or (grade.agent_end if grade is not None else None)
    return RunFacts(
        dir=rel,
        version=run.version,
        scenario=run.scenario,
        agent=run.agent,
        condition=run.cell,
        levels=tuple(run.levels.items()),
        control=run.control,
        trial=run.trial,
        family=family,
        split=split,
        status=status,
        passed=graded and grade.passed if grade else False,
        usable=graded and grade.usable if grade else False,
        reason=reason,
        exit_code=run.exit_code,
        infra_retries=max(run.infra_retries, grade.infra_retries if grade else 0),
        metrics=run_metrics(run, grade),
        checks=tuple(
            CheckFacts(c.id, c.kind, c.layer, c.outcome, tuple((t.id, t.outcome) for t in c.tests))
            for c in (grade.checks if grade is not None else ())
        ),
        failed_layers=grade.failed_layers if grade is not None else (),
        sections=sections,
        artifacts=artifacts,
        regrade=change,
        concurrent=run.concurrent,
        sanity=run.sanity,
        limits_hit=run.limits_hit,
        unprotected=run.protections.failed if run.protections is not None else (),
        usage_differs=grade.usage.adapter_differs if grade is not None else (),
        agent_end=end.cause if end is not None else None,
        context_advisory=grade is not None and bool(grade.context.unexpected or grade.context.error),
        unsafe_edits=run.unsafe_edits_count,
        unpriced=(
            grade.usage.price_table or "no price"
            if grade is not None and grade.usage.present and grade.usage.cost_usd is None
            else None
        ),
        digest=digest(sections),
    )
