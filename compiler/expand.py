"""Stage 3, expand: cells from factors and constraints, matrices into trial plans.

Pure: takes `Validated`, returns `Plan`. Constraint violations prune the product;
an `include` that violates one is an error, as is a matrix over its job cap.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from compiler import matrix as gha
from compiler import rules
from compiler.contract import Canaries, Cell, Limits, Options, Provisions
from compiler.errors import Collector
from compiler.paths import not_a_link_out, rel_path
from compiler.rawcheck import EXTENSION
from compiler.resolved import MatrixIn, Validated
from compiler.specs import ProjectDoc

DEFAULT_MAX_JOBS = 100_000
NOT_PROVISIONS = ("description", "forbid_words", "meta")
PATH_KEYS = ("path",)
PATH_MAPS = ("files", "home_files", "links")


@dataclass(frozen=True)
class MatrixPlan:
    """One matrix, expanded: what runs, grouped by scenario."""

    id: str
    spec: MatrixIn
    cells: dict[str, Cell]
    agents: tuple[str, ...]
    scenarios: tuple[str, ...]
    runs: dict[str, tuple[tuple[str, str], ...]]
    """scenario -> (cell, agent) pairs in expansion order."""
    trials: int
    limits: Limits
    options: Options
    matrix: str = ""
    """The matrix id (`id` is `<matrix>@<version>` for one side of a version comparison)."""
    version: str | None = None
    """The version label, for one side of a version comparison."""

    @property
    def jobs(self) -> int:
        """Trial count."""
        return sum(len(v) for v in self.runs.values()) * self.trials


@dataclass(frozen=True)
class Plan:
    """Everything emit writes."""

    validated: Validated
    cells: dict[str, Cell]
    """Every cell the constraints allow, by name, product order."""
    matrices: dict[str, MatrixPlan]
    default: str | None


def _merge_provisions(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """Levels in factor order: maps deep-merge, lists concatenate (dedup, order kept), scalars: later wins."""
    out: dict[str, Any] = {}
    for part in parts:
        _merge_into(out, part)
    return out


def _merge_into(out: dict[str, Any], part: dict[str, Any]) -> None:
    for k, v in part.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            _merge_into(out[k], v)
        elif isinstance(v, list) and isinstance(out.get(k), list):
            out[k] = out[k] + [x for x in v if x not in out[k]]
        elif isinstance(v, dict):
            out[k] = {}
            _merge_into(out[k], v)
        else:
            out[k] = list(v) if isinstance(v, list) else v


def _level_provisions(c: Collector, v: Validated, factor: str, level: str) -> dict[str, Any]:
    raw = {k: val for k, val in v.levels[factor][level].items() if k not in NOT_PROVISIONS}
    base = ("factors", factor, level)
    doc = v.project_doc
    for key in PATH_KEYS:
        if key in raw:
            raw[key] = [rel_path(c, doc, (*base, key, i), p) or p for i, p in enumerate(raw[key])]
    for key in PATH_MAPS:
        if key in raw:
            raw[key] = {d: rel_path(c, doc, (*base, key, d), s) or s for d, s in raw[key].items()}
    if "skill_dir" in raw:
        raw["skill_dir"] = (
            rel_path(c, doc, (*base, "skill_dir"), raw["skill_dir"]) or raw["skill_dir"]
        ).rstrip("/")
    if "network" in raw and raw["network"] is None:
        del raw["network"]
    return raw


def _violates(project: ProjectDoc, combo: dict[str, Any]) -> str | None:
    def hit(cond: dict[str, str | list[str]]) -> bool:
        return all(combo.get(k) in ([v] if isinstance(v, str) else v) for k, v in cond.items() if k in combo)

    for con in project.constraints:
        relevant = all(k in combo for k in con.when)
        if relevant and hit(con.when) and not hit(con.require):
            return con.message or f"constraint when {con.when} require {con.require}"
    return None


def cells(c: Collector, v: Validated) -> dict[str, Cell]:
    """Every cell of the factor product that no constraint prunes."""
    factors = list(v.levels)
    expanded = gha.expand({f: list(v.levels[f]) for f in factors})
    out: dict[str, Cell] = {}
    for combo in expanded.combos:
        if _violates(v.project, combo):
            continue
        out["/".join(combo[f] for f in factors)] = make_cell(c, v, combo)
    if v.project.control not in out and v.project.control.count("/") == len(factors) - 1:
        c.add(
            v.project_doc.loc(("control",)),
            "control",
            "E228",
            f"control '{v.project.control}' is pruned by a constraint",
        )
    return out


def make_cell(c: Collector, v: Validated, combo: dict[str, Any]) -> Cell:
    """The Cell of one combination of levels."""
    factors = list(v.levels)
    name = "/".join(combo[f] for f in factors)
    merged = _merge_provisions([_level_provisions(c, v, f, combo[f]) for f in factors])
    merged["canaries"] = Canaries(**merged.get("canaries", {}))
    return Cell(
        name=name,
        levels={f: combo[f] for f in factors},
        control=name == v.project.control,
        provisions=Provisions(**merged),
    )


def _entries(raw: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """include/exclude entries without their `x-*` keys: extensions, never matrix keys to match."""
    return [{k: v for k, v in entry.items() if not k.startswith(EXTENSION)} for entry in raw or []]


def _plan(c: Collector, v: Validated, m: MatrixIn, all_cells: dict[str, Cell]) -> MatrixPlan:
    spec, doc = m.spec, m.doc
    factors = list(v.levels)
    agents = list(spec.agents or [])
    scenarios = rules.select_scenarios(m, v.scenarios)
    axes: dict[str, list[Any]] = {**rules.matrix_levels(m, v.levels), "agent": agents, "scenario": scenarios}
    keep = None
    if spec.cells is not None:
        wanted = set(spec.cells)

        def keep(combo: dict[str, Any]) -> bool:
            return "/".join(combo[f] for f in factors) in wanted

    exp = gha.expand(axes, _entries(spec.exclude), _entries(spec.include), keep=keep)
    runs: dict[str, list[tuple[str, str]]] = {s: [] for s in scenarios}
    used: dict[str, Cell] = {}
    kept_fitted: set[int] = set()  # includes that extended at least one combination that runs
    pruned_fitted: dict[int, str] = {}  # include -> why a combination it extended was pruned
    for combo, inc, fitted in zip(exp.combos, exp.appended_by, exp.fitted_by, strict=True):
        if fitted:
            why = _violates(v.project, combo)
            if why is None:
                kept_fitted.update(fitted)
            else:
                pruned_fitted.update({i: why for i in fitted})
        todo = [combo]
        if inc is not None:
            missing = [f for f in factors if f not in combo]
            if missing:
                c.add(
                    doc.loc(("include", inc)),
                    f"include[{inc}]",
                    "E281",
                    f"this include adds a new combination but sets no {', '.join(missing)}",
                    "a new combination needs a level for every factor",
                )
                continue
            todo = [
                {**combo, "agent": a, "scenario": s}
                for a in ([combo["agent"]] if "agent" in combo else agents)
                for s in ([combo["scenario"]] if "scenario" in combo else scenarios)
            ]
        for one in todo:
            why = _violates(v.project, one)
            if why is not None:
                if inc is not None:
                    c.add(
                        doc.loc(("include", inc)),
                        f"include[{inc}]",
                        "E280",
                        f"this include violates a constraint: {why}",
                        "constraints apply to included combinations too",
                    )
                    break
                continue
            name = "/".join(one[f] for f in factors)
            if name not in used:
                used[name] = all_cells.get(name) or make_cell(c, v, one)
            runs.setdefault(one["scenario"], []).append((name, one["agent"]))
    for i in sorted(set(pruned_fitted) - kept_fitted):  # it names only what a constraint prunes
        c.add(
            doc.loc(("include", i)),
            f"include[{i}]",
            "E280",
            f"this include violates a constraint: {pruned_fitted[i]}",
            "constraints apply to included combinations too",
        )
    for i, cell in enumerate(spec.cells or []):
        if cell not in used:
            combo = dict(zip(factors, cell.split("/"), strict=True))
            why = _violates(v.project, combo)
            c.add(
                doc.loc(("cells", i)),
                f"cells[{i}]",
                "E229",
                f"cell '{cell}' runs nothing: "
                + (f"a constraint prunes it ({why})" if why else "every combination is excluded"),
            )
    if not any(runs.values()) and not (spec.cells and not used):  # listed cells that run nothing: E229
        _selects_nothing(c, m, scenarios, exp.excluded)
    trials = spec.trials or 1
    total = sum(len(r) for r in runs.values()) * trials
    cap = spec.max_jobs if spec.max_jobs is not None else DEFAULT_MAX_JOBS
    if total > cap:
        c.add(
            doc.loc(("max_jobs",)),
            "max_jobs",
            "E282",
            f"the matrix has {total} trials, over its cap of {cap}",
            "narrow it (factors, scenarios, exclude) or raise max_jobs",
        )
    options = m.options
    upd: dict[str, Any] = {}
    for key in ("skill_dir", "wiki_dir"):
        val = getattr(options, key)
        rel = rel_path(c, doc, ("options", key), val) if val is not None else None
        if rel is not None:
            not_a_link_out(c, doc.loc(("options", key)), ("options", key), rel, v.outside)
        if val is not None:
            upd[key] = (rel or val).rstrip("/")
    ordered = {name: used[name] for name in all_cells if name in used}
    ordered.update({n: cl for n, cl in used.items() if n not in ordered})
    return MatrixPlan(
        id=spec.id,
        spec=m,
        cells=ordered,
        agents=tuple(agents),
        scenarios=tuple(scenarios),
        runs={s: tuple(r) for s, r in runs.items() if r},
        trials=trials,
        limits=m.limits,
        options=options.model_copy(update=upd),
    )


def _selects_nothing(c: Collector, m: MatrixIn, scenarios: list[str], excluded: int) -> None:
    """A matrix without a single trial: an error at the key that emptied it (E283). Not when no
    scenario matches yet: a project being built (a tag no scenario carries before an import or
    `assay new scenario`) compiles, and `assay compile` says that matrix has nothing to run."""
    spec, doc = m.spec, m.doc
    if not scenarios:
        return
    if excluded:
        where: tuple[str, ...] = ("exclude",)
        why = "`exclude:` removes every combination"
    else:
        where, why = ("factors",) if spec.factors else (), "a constraint prunes every combination"
    c.add(doc.loc(where, key=True), ".".join(where), "E283", f"the matrix selects no trial: {why}")


PACKAGES_DIR = ".cache/versions"
"""Where a version given as `package:` is installed, one folder per label (its PATH entry)."""


def package_dir(label: str) -> str:
    """The project-relative folder a `package:` version is installed into and put on PATH from."""
    return f"{PACKAGES_DIR}/{label}"


def _scripted(c: Collector, v: Validated, plans: dict[str, MatrixPlan]) -> None:
    """A scripted agent has steps for every scenario a matrix runs it on (compiler.agentargs); a
    scenario's own script without them is an error in that script, at its steps."""
    for each in v.scripts.values():
        c.extend(each.problems)
    missing: dict[str, set[str]] = {}
    for plan in plans.values():
        for sid, pairs in plan.runs.items():
            root = v.scenarios[sid].job.root
            for agent in sorted({a for _, a in pairs}):
                script = v.scripts.get(agent)
                if script is None or script.has_steps(sid, root):
                    continue
                own = script.own.get(root)
                if own is None:
                    missing.setdefault(agent, set()).add(sid)
                    continue
                c.add(
                    own.where,
                    own.path,
                    "E237",
                    f"this script has no steps for {sid}, and scripted agent '{agent}' runs it there",
                    "add steps (`assay new scripts --force` rewrites it from the reference and negatives)",
                )
    for agent, sids in sorted(missing.items()):
        script = v.scripts[agent]
        path = ("args", "scenario_script" if script.per_scenario else "script")
        first = min(sids)
        c.add(
            v.agent_docs[agent].loc(path),
            ".".join(path),
            "E237",
            f"scripted agent '{agent}' has no steps for {', '.join(sorted(sids))}, which a matrix runs it on",
            script.hint(first, v.scenarios[first].job.root),
        )


def expand(v: Validated) -> Plan:
    """Cells and matrix plans; raises SpecErrors on include/cap violations."""
    c = Collector()
    all_cells = cells(c, v)
    plans: dict[str, MatrixPlan] = {}
    for mid, m in sorted(v.matrices.items()):
        plan = _plan(c, v, m, all_cells)
        if not m.spec.versions:
            plans[mid] = replace(plan, matrix=mid)
            continue
        for name, ver in m.spec.versions.items():  # one plan per side of the version comparison
            build = rel_path(c, m.doc, ("versions", name, "path"), ver.path) if ver.path else None
            if build is None and ver.package:  # `assay matrix` installs it there (harness/batch/versions.py)
                build = package_dir(ver.label)
            cells_v = {
                n: cl.model_copy(
                    update={
                        "provisions": cl.provisions.model_copy(update={"path": (build, *cl.provisions.path)})
                    }
                )
                if build and cl.provisions.path
                else cl
                for n, cl in plan.cells.items()
            }
            plans[f"{mid}@{ver.label}"] = replace(
                plan, id=f"{mid}@{ver.label}", matrix=mid, version=ver.label, cells=cells_v
            )
    _scripted(c, v, plans)
    c.raise_if_any()
    defaults = [mid for mid, m in sorted(v.matrices.items()) if m.spec.default]
    default = defaults[0] if defaults else (next(iter(plans)) if len(plans) == 1 else None)
    return Plan(validated=v, cells=all_cells, matrices=plans, default=default)
