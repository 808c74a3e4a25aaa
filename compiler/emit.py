"""Stage 4, emit: the only stage that writes. Plan -> generated/manifest.json + job files.

Deterministic: sorted keys, project-relative paths, no timestamps; compiling twice
gives byte-identical files. Files are written to a temporary name and renamed, and
the manifest goes last, so a killed compile never leaves a manifest that points at
missing or half-written job files. Job files no longer produced are removed.
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from compiler.contract import (
    JOBS_DIR,
    MANIFEST_FILE,
    SCHEMA_VERSION,
    AgentSpec,
    Cell,
    JobFile,
    Limits,
    Manifest,
    MatrixEntry,
    RoundsPlan,
    ScenarioEntry,
    ScenarioLimits,
    Session,
    Variant,
)
from compiler.expand import MatrixPlan, Plan, package_dir
from compiler.pipeline import OUTPUTS_FILE, outputs_record
from compiler.resolved import Validated
from compiler.sandbox import clamp


def canonical(value: Any) -> str:
    """The one JSON spelling of a value (sorted keys, compact)."""
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def digest(*parts: str) -> str:
    """sha256 over parts."""
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode())
        h.update(b"\0")
    return h.hexdigest()


def _compact(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def pretty(value: Any) -> str:
    """How generated JSON files are written: sorted keys, two levels unfolded, deeper values on one line.

    One line per top-level field, per cell, per agent, per variant, per scenario field: readable
    and diffable, and written by the C encoder (full indentation falls back to pure Python,
    which dominated the compile time of a 150,000-trial suite).
    """
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    lines = []
    for key in sorted(value):
        v = value[key]
        if isinstance(v, list) and v:
            text = "[\n  " + ",\n  ".join(_compact(x) for x in v) + "\n ]"
        elif isinstance(v, dict) and v:
            text = "{\n  " + ",\n  ".join(f"{_compact(k)}: {_compact(v[k])}" for k in sorted(v)) + "\n }"
        else:
            text = _compact(v)
        lines.append(f" {_compact(key)}: {text}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def session_name(cell: str, taken: set[str]) -> str:
    """`bench-bin-skill-none-off` from `bin+skill/none/off`: plain, safe for nox -k and the shell."""
    base = "bench-" + re.sub(r"[^a-z0-9]+", "-", cell.lower()).strip("-")
    name, n = base, 2
    while name in taken:
        name, n = f"{base}-{n}", n + 1
    taken.add(name)
    return name


def _tree_hash(hashes: dict[str, str], files: list[str]) -> str:
    return digest(*(f"{k}:{hashes[k]}" for k in files))


def _provided_hash(v: Validated, cell: Cell) -> str:
    """The content of what a cell provides (tool launchers, guides, files): part of its jobs' hash."""
    p = cell.provisions
    named = [
        *p.path,
        *p.files.values(),
        *p.home_files.values(),
        *p.links.values(),
        *([p.skill_dir] if p.skill_dir else []),
    ]
    parts: list[str] = []
    for name in named:
        files = [name] if name in v.input_hashes else v.inputs_under(name)
        parts += [f"{f}:{v.input_hashes[f]}" for f in files]
    return digest(*parts)


def _args_hash(v: Validated, args: dict[str, Any]) -> str:
    """The content of project files an agent's arguments name (a scripted agent's script)."""
    return digest(
        *(
            f"{a}:{v.input_hashes[a]}"
            for a in sorted(args.values(), key=str)
            if isinstance(a, str) and a in v.input_hashes
        )
    )


def _limits(matrix: Limits, scenario: ScenarioLimits | None) -> Limits:
    """The matrix's limits with a scenario's own inside them (each the smaller of the two)."""
    if scenario is None:
        return matrix
    return matrix.model_copy(
        update={k: clamp(getattr(matrix, k), getattr(scenario, k)) for k in ScenarioLimits.model_fields}
    )


def _agent_identity(agent: AgentSpec) -> str:
    """The agent as far as its runs go: `sanity` only says how the report reads them, so marking an
    agent as a sanity bound later does not invalidate its finished runs."""
    return canonical(agent.model_dump(mode="json", exclude={"sanity"}))


def job_files(plan: Plan) -> dict[str, JobFile]:
    """Every job file by its path relative to generated/."""
    out: dict[str, JobFile] = {}
    v = plan.validated
    for mp in plan.matrices.values():
        cell_h = {n: digest(canonical(cl), _provided_hash(v, cl)) for n, cl in mp.cells.items()}
        agent_h = {
            a: digest(_agent_identity(v.agents[a]), _args_hash(v, v.agents[a].args)) for a in mp.agents
        }
        common = digest(
            str(SCHEMA_VERSION), mp.id, str(mp.version), canonical(mp.limits), canonical(mp.options)
        )
        for sid, pairs in sorted(mp.runs.items()):
            sj = v.scenarios[sid].job
            scen_h = digest(canonical(sj), _tree_hash(v.input_hashes, v.scenarios[sid].files))
            variants = tuple(
                Variant(cell=c, agent=a, trials=mp.trials, hash=digest(common, scen_h, cell_h[c], agent_h[a]))
                for c, a in pairs
            )
            used_cells = {c for c, _ in pairs}
            used_agents = {a for _, a in pairs}
            out[f"{JOBS_DIR}/{mp.id}/{sid}.json"] = JobFile(
                matrix=mp.matrix or mp.id,
                version=mp.version,
                scenario=sj,
                cells={n: cl for n, cl in mp.cells.items() if n in used_cells},
                agents={a: v.agents[a] for a in mp.agents if a in used_agents},
                limits=_limits(mp.limits, sj.limits),
                options=mp.options,
                variants=variants,
            )
    return out


def _version(mp: MatrixPlan, name: str, ver: Any) -> dict[str, Any]:
    """One side of a version comparison; its `path` made project-relative (as the cells' PATH has it)."""
    out: dict[str, Any] = ver.model_dump(exclude_none=True)
    if ver.path:
        base = posixpath.dirname(mp.spec.doc.loc(("versions", name, "path")).file)
        out["path"] = posixpath.normpath(posixpath.join(base, ver.path))
    elif ver.package:
        out["path"] = package_dir(ver.label)
    return out


def _entry(mp: MatrixPlan, default: bool) -> MatrixEntry:
    spec = mp.spec.spec
    used = {c for pairs in mp.runs.values() for c, _ in pairs}
    return MatrixEntry(
        id=mp.id,
        matrix=mp.matrix or mp.id,
        version=mp.version,
        default=default,
        description=spec.description,
        agents=mp.agents,
        cells=tuple(c for c in mp.cells if c in used),
        scenarios=tuple(sorted(mp.runs)),
        trials=mp.trials,
        jobs=mp.jobs,
        parallel=spec.parallel,
        seed=spec.seed,
        fail_fast=bool(spec.fail_fast),
        versions={k: _version(mp, k, ver) for k, ver in (spec.versions or {}).items()},
        files={sid: f"{JOBS_DIR}/{mp.id}/{sid}.json" for sid in sorted(mp.runs)},
        rounds=_rounds(spec),
    )


def _rounds(spec: Any) -> RoundsPlan | None:
    """The matrix's rounds plan (until, min_uplift, budget), None when it sets none of them."""
    budget = spec.budget
    if spec.until is None and spec.min_uplift is None and budget is None:
        return None
    return RoundsPlan(
        until=spec.until or "planned",
        min_uplift=spec.min_uplift or 0.0,
        budget_tokens=budget.tokens if budget else None,
        budget_cost_usd=budget.cost_usd if budget else None,
    )


def manifest(plan: Plan) -> Manifest:
    """The manifest of a plan."""
    v = plan.validated
    sessions: list[Session] = []
    if plan.default is not None:
        taken: set[str] = set()
        cells: list[str] = []
        for mp in plan.matrices.values():
            if (mp.matrix or mp.id) == plan.default:
                cells += [c for c in _entry(mp, True).cells if c not in cells]
        for cell in cells:
            sessions.append(Session(name=session_name(cell, taken), matrix=plan.default, cell=cell))
    return Manifest(
        fingerprint=v.fingerprint,
        project=v.project.name,
        spec_version=v.project.spec_version,
        inputs=dict(sorted(v.input_hashes.items())),
        factor_order=tuple(v.levels),
        factors={f: tuple(lv) for f, lv in v.levels.items()},
        languages=tuple(v.project.languages),
        cells=tuple(plan.cells.values()),
        control=v.project.control,
        agents=dict(sorted(v.agents.items())),
        scenarios={
            s: ScenarioEntry(
                id=s, root=x.job.root, family=x.job.family, split=x.job.split, language=x.job.language
            )
            for s, x in sorted(v.scenarios.items())
        },
        matrices={m: _entry(mp, (mp.matrix or m) == plan.default) for m, mp in sorted(plan.matrices.items())},
        default_matrix=plan.default,
        sessions=tuple(sessions),
    )


def _write(path: Path, text: str) -> bool:
    """Atomically write `text` unless the file already holds it; True when written."""
    data = text.encode("utf-8")
    try:
        if path.stat().st_size == len(data) and path.read_bytes() == data:
            return False
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise
    return True


def emit(plan: Plan, generated: Path) -> int:
    """Write generated/ for a plan; returns the number of files written (unchanged files are kept)."""
    files = {rel: pretty(jf) for rel, jf in sorted(job_files(plan).items())}
    written = 0
    jobs_root = generated / JOBS_DIR
    if jobs_root.is_dir():
        for old in jobs_root.rglob("*.json"):
            if old.relative_to(generated).as_posix() not in files:
                old.unlink()
        for d in sorted((p for p in jobs_root.rglob("*") if p.is_dir()), reverse=True):
            if not any(d.iterdir()):
                d.rmdir()
    files[MANIFEST_FILE] = pretty(manifest(plan))  # last: a manifest never names a file not yet written
    for rel, text in files.items():
        written += _write(generated / rel, text)
    _write(generated / OUTPUTS_FILE, outputs_record({rel: text.encode() for rel, text in files.items()}))
    return written
