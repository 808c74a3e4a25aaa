"""Declarative expectations: named predicates over the trace, snapshots, transcript and events.

Seed 000's E01–E12, generalised. An expectation is a map, either a project-wide spec
`specs/expectations/<id>.yaml` (`kind: expectation`; applies to every run its `when`
matches) or inline in a scenario's `expectations:`:

    id: check-after-last-write
    description: ran the tool's check after the last write
    when: { stability_risk: true, levels: { tool: [bin, bin+skill] } }   # optional
    trace: { command: ruff, subcommand: check, after_last_write: true }

with exactly one predicate: `trace`, `transcript`, `events`, `snapshot` (the parameters of
the check kinds of the same names), `friction` (field -> max, or {min, max}), or `all` /
`any` (lists of predicates) / `not` (one predicate). Each verdict is pass, fail, or
unavailable (its evidence is missing: no transcript, no authority to decide snapshots).
An expectation whose `when` does not hold for the run is not reported.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.artifacts.grade_sections import ExpectationOutcome, Friction
from harness.artifacts.run_view import RunView
from harness.artifacts.store import read_plain
from harness.checks import events, snapshot, trace, transcript
from harness.checks.base import CheckContext, CheckError, CheckUnavailable, Verdict, as_list

EXPECTATIONS_DIR = Path("specs") / "expectations"
PREDICATES = ("trace", "transcript", "events", "snapshot", "friction", "all", "any", "not")
_META = frozenset({"id", "name", "ref", "description", "when", "kind", "meta"})


@dataclass(frozen=True)
class Evidence:
    """What predicates read besides the run view."""

    view: RunView
    workspace: Path
    ctx: CheckContext
    friction: Friction


def library(project: Path | None) -> dict[str, dict[str, Any]]:
    """Expectation specs of the project by id."""
    found: dict[str, dict[str, Any]] = {}
    if project is None or not (project / EXPECTATIONS_DIR).is_dir():
        return found
    for path in sorted((project / EXPECTATIONS_DIR).glob("*.y*ml")):
        raw = read_plain(path)
        if isinstance(raw, dict) and raw.get("kind") == "expectation" and raw.get("id"):
            found[str(raw["id"])] = raw
    return found


def resolve(entries: tuple[dict[str, Any], ...], lib: Mapping[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Every library expectation (seed 000's E01-E12 are global), then the scenario's own.

    A scenario entry naming a library expectation (`{name: id}` as the compiler writes it,
    or an `id` / `ref` without a predicate) overrides that expectation's keys (a `when`,
    say); an inline entry is added; a name the library does not know stays, and is
    reported `unavailable`.
    """
    merged: dict[str, dict[str, Any]] = {ident: dict(spec) for ident, spec in sorted(lib.items())}
    extra: list[dict[str, Any]] = []
    for entry in entries:
        predicate_given = bool(set(entry) & set(PREDICATES))
        ref = entry.get("ref") or (None if predicate_given else entry.get("name") or entry.get("id"))
        if ref is not None and str(ref) in merged:
            merged[str(ref)].update({k: v for k, v in entry.items() if k not in ("ref", "name")})
        elif ref is not None:
            extra.append({"id": str(ref), **{k: v for k, v in entry.items() if k not in ("ref", "name")}})
        else:
            extra.append(dict(entry))
    return [*merged.values(), *extra]


def applies(when: Mapping[str, Any] | None, view: RunView) -> bool:
    """Whether an expectation's `when` holds for this run."""
    if not when:
        return True
    scenario = view.job.scenario
    if "stability_risk" in when and bool(when["stability_risk"]) != scenario.stability_risk:
        return False
    for factor, levels in (when.get("levels") or {}).items():
        if view.job.cell.levels.get(factor) not in [str(x) for x in as_list(levels)]:
            return False
    if "family" in when and scenario.family not in [str(x) for x in as_list(when["family"])]:
        return False
    return not ("scenario" in when and scenario.id not in [str(x) for x in as_list(when["scenario"])])


def predicate(spec: Mapping[str, Any], ev: Evidence) -> Verdict:
    """Evaluate one predicate map (raises CheckUnavailable / CheckError)."""
    keys = [k for k in PREDICATES if k in spec]
    if len(keys) != 1:
        raise CheckError(f"needs exactly one predicate of {', '.join(PREDICATES)} (got {keys or 'none'})")
    key = keys[0]
    params = spec[key]
    if key == "trace":
        return trace.evaluate(params or {}, ev.view)
    if key == "transcript":
        return transcript.evaluate(params, ev.view)
    if key == "events":
        return events.evaluate(params or {}, ev.view)
    if key == "snapshot":
        return snapshot.evaluate(params or {}, ev.view, ev.workspace, ev.ctx)
    if key == "friction":
        return _friction(params, ev.friction)
    if key == "not":
        inner = predicate(params, ev)
        return Verdict(not inner.passed, f"not ({inner.message})")
    parts = [predicate(p, ev) for p in params]
    ok = all(p.passed for p in parts) if key == "all" else any(p.passed for p in parts)
    return Verdict(ok, f"{key}: " + "; ".join(p.message for p in parts))


def _friction(params: Mapping[str, Any], friction: Friction) -> Verdict:
    problems, seen = [], []
    for field, bound in params.items():
        if field not in Friction.model_fields:
            raise CheckError(f"unknown friction field {field!r}; known: {', '.join(Friction.model_fields)}")
        value = getattr(friction, field)
        low, high = (bound.get("min", 0), bound.get("max")) if isinstance(bound, Mapping) else (0, bound)
        seen.append(f"{field}={value}")
        if value < int(low) or (high is not None and value > int(high)):
            problems.append(f"{field}={value} outside [{low}, {high}]")
    return Verdict(not problems, "; ".join(problems) or ", ".join(seen))


def evaluate(entries: list[dict[str, Any]], ev: Evidence) -> tuple[ExpectationOutcome, ...]:
    """One verdict per applicable expectation, in declaration order."""
    out: list[ExpectationOutcome] = []
    for n, spec in enumerate(entries):
        ident = str(spec.get("id") or spec.get("name") or f"expectation-{n + 1}")
        if not applies(spec.get("when"), ev.view):
            continue
        description = str(spec.get("description", ""))
        try:
            verdict = predicate({k: v for k, v in spec.items() if k not in _META}, ev)
            outcome = "pass" if verdict.passed else "fail"
            message = verdict.message
        except CheckUnavailable as exc:
            outcome, message = "unavailable", str(exc)
        except CheckError as exc:
            outcome, message = "unavailable", f"cannot evaluate: {exc}"
        except (TypeError, ValueError, AttributeError) as exc:
            # A library spec edited after the compile (the compiler refuses these): evidence, not a crash.
            outcome, message = "unavailable", f"cannot evaluate: malformed expectation: {exc}"
        out.append(ExpectationOutcome(id=ident, outcome=outcome, message=message, description=description))
    return tuple(out)
