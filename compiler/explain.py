"""Provenance: every resolved field of one job and the file:line:col it came from.

Works on the in-memory plan (no generated/ needed): each leaf of the job is traced
back through the documents that were merged into it (`extends:` chains and project
defaults keep their positions), the levels of its cell, or a built-in default.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, NamedTuple

from compiler.contract import Job, parse_job_id
from compiler.emit import job_files
from compiler.errors import Loc
from compiler.expand import Plan
from compiler.yamlio import Doc, Path_

BUILTIN = "built-in default"


class Line(NamedTuple):
    """One resolved field: dotted path, JSON value, where it came from."""

    path: str
    value: str
    source: str


def find_job(plan: Plan, job: str) -> Job:
    """The job with this id in a plan; KeyError when there is none."""
    jid = parse_job_id(job)
    jf = job_files(plan).get(f"jobs/{jid.matrix}/{jid.scenario}.json")
    if jf is not None:
        for v in jf.variants:
            if v.cell == jid.cell and v.agent == jid.agent and 1 <= jid.trial <= v.trials:
                return jf.job(v, jid.trial)
    raise KeyError(f"no job {job!r} in the compiled plan")


def _leaves(value: Any, path: Path_) -> Iterator[tuple[Path_, Any]]:
    if isinstance(value, dict) and value:
        for k in value:
            yield from _leaves(value[k], (*path, k))
    elif isinstance(value, list) and value and any(isinstance(x, dict | list) for x in value):
        for i, x in enumerate(value):
            yield from _leaves(x, (*path, i))
    else:
        yield path, value


def _fmt(loc: Loc | None) -> str:
    """file:line:col, or the built-in default."""
    return f"{loc.file}:{loc.line}:{loc.col}" if loc else BUILTIN


def _at(doc: Doc, path: Path_) -> Loc | None:
    """The position of exactly this path in doc (None when the document does not set it)."""
    return doc.values.get(tuple(path))


def _level_chain(plan: Plan, factor: str, level: str) -> Iterator[tuple[str, ...]]:
    """('factors', factor, level) and then each level its `extends:` names, in order."""
    levels = plan.validated.project_doc.data.get("factors", {}).get(factor, {})
    seen: set[str] = set()
    current: str | None = level
    while current is not None and current not in seen:
        seen.add(current)
        yield ("factors", factor, current)
        body = levels.get(current) or {}
        parent = body.get("extends") if isinstance(body, dict) else None
        current = parent if isinstance(parent, str) else None


def _provision(plan: Plan, job: Job, key: Path_) -> str:
    pdoc = plan.validated.project_doc
    found: list[str] = []
    for f, lv in job.cell.levels.items():
        for base in _level_chain(plan, f, lv):
            loc = _at(pdoc, (*base, *key))
            if loc is not None:
                found.append(_fmt(loc) + ("" if base[2] == lv else f" (via {lv} extends {base[2]})"))
                break
    return ", ".join(found) if found else BUILTIN


def _check(plan: Plan, job: Job, i: int, rest: Path_) -> str:
    v = plan.validated
    s = v.scenarios[job.scenario.id]
    base = s.check_paths[i]
    check = job.scenario.checks[i]
    kdoc = v.kind_docs.get(check.source_kind or "")
    if rest == ("source_kind",):
        return _fmt(_at(s.doc, (*base, "kind"))) if check.source_kind else BUILTIN
    if rest[:1] != ("params",):
        loc = _at(s.doc, (*base, *rest))
        if loc is None and kdoc is not None:
            loc = _at(kdoc, rest)
        return _fmt(loc)
    param = rest[1:]
    if kdoc is None:
        return _fmt(_at(s.doc, (*base, *param)) or _at(s.doc, (*base, *param[:1])))
    if param[:1] == ("with",) and len(param) > 1:
        loc = _at(s.doc, (*base, "with", param[1])) or _at(s.doc, (*base, param[1]))
        return _fmt(loc or _at(kdoc, ("params", param[1], "default")))
    return _fmt(
        _at(kdoc, param)
        or _at(kdoc, param[:1])
        or (_at(kdoc, ("result",)) if param[:1] == ("exit",) else None)
    )


def _scenario(plan: Plan, job: Job, rest: Path_) -> str:
    s = plan.validated.scenarios[job.scenario.id]
    if not rest:
        return s.doc.file
    if rest[0] == "checks" and len(rest) >= 2 and isinstance(rest[1], int):
        return _check(plan, job, rest[1], rest[2:])
    if rest[0] == "negatives" and len(rest) >= 2 and isinstance(rest[1], int):
        neg = job.scenario.negatives[rest[1]]
        field = rest[2] if len(rest) > 2 else "name"
        if field == "name":
            return _fmt(s.doc.keys.get(("negatives", neg.name)))
        if field == "dir":
            return f"{neg.dir}/ (folder)" if neg.dir else BUILTIN
        return _fmt(_at(s.doc, ("negatives", neg.name, field)))
    if rest[0] == "prompt":
        return f"{s.prompt_file}:1:1" if s.prompt_file else BUILTIN
    if rest[0] in ("seed", "reference", "grader", "root"):
        value = getattr(job.scenario, str(rest[0]))
        return f"{value}/ (folder)" if value else BUILTIN
    if rest[0] == "watch" and _at(s.doc, ("watch",)) is None:
        return f"{_fmt(_at(s.doc, ('entry',)))} (the entry)" if job.scenario.entry else BUILTIN
    return _fmt(_at(s.doc, rest) or _at(s.doc, rest[:1]))


def _source(plan: Plan, job: Job, path: Path_) -> str:
    v = plan.validated
    head, rest = path[0], path[1:]
    if head == "scenario":
        return _scenario(plan, job, rest)
    if head == "cell":
        pdoc = v.project_doc
        if rest[:1] == ("provisions",) and len(rest) >= 2:
            return _provision(plan, job, rest[1:])
        if rest[:1] == ("levels",) and len(rest) == 2:
            return _fmt(pdoc.keys.get(("factors", rest[1], job.cell.levels[str(rest[1])])))
        if rest[:1] == ("control",):
            return _fmt(_at(pdoc, ("control",)))
        return _fmt(_at(pdoc, ("factors",)))
    if head == "agent":
        doc = v.agent_docs[job.agent.id]
        return _fmt(_at(doc, rest) or (doc.values.get(("id",)) if rest == ("id",) else None))
    m = v.matrices[job.matrix]
    if head in ("limits", "options"):
        return _fmt(_at(m.doc, path))
    if head in ("matrix", "id", "trial"):
        return _fmt(m.doc.values.get(("id",)))
    if head == "hash":
        return "computed from every other field"
    return BUILTIN


def explain(plan: Plan, job: str, *, width: int = 100) -> list[Line]:
    """Every leaf of the job with its source."""
    found = find_job(plan, job)
    out: list[Line] = []
    for path, value in _leaves(found.model_dump(mode="json"), ()):
        text = json.dumps(value, ensure_ascii=False, sort_keys=True)
        if width and len(text) > width:
            text = text[: width - 1] + "…"
        dotted = ""
        for p in path:
            dotted += f"[{p}]" if isinstance(p, int) else (f".{p}" if dotted else str(p))
        out.append(Line(dotted, text, _source(plan, found, path)))
    return out
