"""Stage 2, validate: raw documents -> checked, typed, inheritance-resolved specs.

Per document: `kind:` dispatch, `extends:` (deep-merge, positions kept), cerberus on
the merged raw data, then the pydantic model. Then the cross-file rules
(`compiler.rules`). Every error of every file is collected; the stage raises once.
"""

from __future__ import annotations

from typing import Any

from compiler import agentargs, rawcheck, rules, scenarios
from compiler.contract import ISOLATIONS, LIMITS_OFF, AgentSpec, Limits, Options
from compiler.declared import Declared, declared
from compiler.errors import Collector, Loc, did_you_mean
from compiler.expectations import library as expectation_library
from compiler.hostfiles import named_host_files
from compiler.ids import check_slug, is_dotted
from compiler.load import Sources
from compiler.merge import merge_values, overlay
from compiler.rawcheck import describe, model_of
from compiler.resolved import MatrixIn, Validated
from compiler.specs import KINDS, AgentDoc, CheckKindDoc, MatrixDoc, PricesDoc, ProjectDoc
from compiler.yamlio import Doc, dotted

PROJECT_FILE = "specs/project.yaml"
PRICES_FILE = "specs/prices.yaml"
"""The price table (harness/artifacts/prices.py reads it from there)."""
NOT_INHERITED = ("id", "extends", "default", "kind")


def _by_id(c: Collector, docs: list[Doc], kind: str) -> dict[str, Doc]:
    out: dict[str, Doc] = {}
    for doc in docs:
        ident = doc.data.get("id")
        if ident is None:
            c.add(doc.loc(()), "id", "E102", "missing required key 'id'")
            continue
        if not check_slug(c, doc, ("id",), ident, f"{kind} id"):
            continue
        if ident in out:
            first = out[ident].loc(("id",))
            c.add(
                doc.loc(("id",)),
                "id",
                "E111",
                f"duplicate {kind} id '{ident}'",
                f"first defined at {first.file}:{first.line}",
            )
            continue
        out[ident] = doc
    return out


def _resolve_extends(c: Collector, docs: dict[str, Doc], kind: str, names: Declared) -> dict[str, Doc]:
    """Merge each document over its `extends:` chain (cycles and unknown parents are errors; a
    child of a parent with errors of its own is left out, as the parent is)."""
    done: dict[str, Doc] = {}

    def resolve(ident: str, seen: tuple[str, ...]) -> Doc | None:
        if ident in done:
            return done[ident]
        doc = docs[ident]
        parent = doc.data.get("extends")
        if parent is None:
            done[ident] = doc
            return doc
        if not isinstance(parent, str) or parent not in docs:
            if names.broken(kind, parent, docs):
                return None
            c.add(
                doc.loc(("extends",)),
                "extends",
                "E120",
                f"extends unknown {kind} {parent!r}",
                did_you_mean(str(parent), docs),
            )
            return None
        if parent in seen:
            c.add(doc.loc(("extends",)), "extends", "E121", f"extends cycle: {' -> '.join((*seen, parent))}")
            return None
        base = resolve(parent, (*seen, parent))
        if base is None:
            return None
        merged = overlay(base, doc, drop=NOT_INHERITED)
        done[ident] = merged
        return merged

    out: dict[str, Doc] = {}
    for ident in docs:
        merged = resolve(ident, (ident,))
        if merged is not None:
            out[ident] = merged
    return out


def _resolve_level(
    c: Collector,
    doc: Doc,
    factor: str,
    name: str,
    raw: dict[str, dict[str, Any]],
    done: dict[str, dict[str, Any]],
    seen: tuple[str, ...],
) -> dict[str, Any]:
    """One level merged over its `extends:` chain within its factor (unknown parents and cycles reported)."""
    if name in done:
        return done[name]
    level = raw[name]
    parent = level.get("extends")
    value = level
    if parent is not None:
        path = ("factors", factor, name, "extends")
        if parent not in raw:
            c.add(
                doc.loc(path),
                dotted(path),
                "E120",
                f"extends unknown level {parent!r} of factor '{factor}'",
                did_you_mean(parent, raw),
            )
        elif parent in seen:
            c.add(doc.loc(path), dotted(path), "E121", f"extends cycle: {' -> '.join((*seen, parent))}")
        else:
            value = merge_values(_resolve_level(c, doc, factor, parent, raw, done, (*seen, parent)), level)
    done[name] = {k: v for k, v in value.items() if k != "extends"}
    return done[name]


def _levels(c: Collector, doc: Doc, project: ProjectDoc) -> dict[str, dict[str, dict[str, Any]]]:
    """factor -> level -> provisions after the level's `extends:`, in declaration order."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for factor, levels in project.factors.items():
        check_slug(c, doc, ("factors", factor), factor, "factor")
        raw = {
            name: (lvl.model_dump(exclude_none=True) if lvl is not None else {})
            for name, lvl in levels.items()
        }
        if not raw:
            c.add(
                doc.loc(("factors", factor)), f"factors.{factor}", "E130", f"factor '{factor}' has no levels"
            )
        done: dict[str, dict[str, Any]] = {}
        for name in raw:
            check_slug(c, doc, ("factors", factor, name), name, "level")
            _resolve_level(c, doc, factor, name, raw, done, (name,))
        out[factor] = {name: done[name] for name in raw}
    return out


def _defaults_doc(pdoc: Doc, project: ProjectDoc) -> Doc:
    """The project's `defaults:` as a document a matrix can be merged over."""
    data = project.defaults.model_dump(exclude_none=True) if project.defaults else {}
    out = Doc(pdoc.file, data)
    n = 1
    for table_src, table_dst in ((pdoc.values, out.values), (pdoc.keys, out.keys)):
        for p, loc in table_src.items():
            if p[:1] == ("defaults",):
                table_dst[p[n:]] = loc
    return out


def _isolation(c: Collector, doc: Doc, name: str) -> None:
    """A matrix's isolation is a known short name or a dotted path (found when the run starts)."""
    if name not in ISOLATIONS and not is_dotted(name):
        c.add(
            doc.loc(("options", "isolation")),
            "options.isolation",
            "E104",
            f"unknown isolation {name!r}",
            f"one of: {', '.join(ISOLATIONS)}, or a dotted path pkg.mod:Class",
        )


def _prices(c: Collector, docs: list[Doc]) -> None:
    """The price table: one, at PRICES_FILE, the only file the grader and the gateway read."""
    for doc in docs:
        model_of(c, doc, PricesDoc)
        if doc.file != PRICES_FILE:
            c.add(
                doc.loc(("kind",)),
                "kind",
                "E133",
                f"a price table outside {PRICES_FILE}"
                + (" (a second one)" if any(d.file == PRICES_FILE for d in docs) else ""),
                f"costs are read from {PRICES_FILE} alone: move the table there, or merge it into it",
            )


def _kind_of(c: Collector, doc: Doc) -> str | None:
    """The document's `kind:`, one of KINDS; None (and an error) when it has none or another."""
    if not isinstance(doc.data, dict):
        c.add(doc.loc(()), "", "E103", "a spec file must be a map with `kind:`")
        return None
    kind = doc.data.get("kind")
    if isinstance(kind, str) and kind in KINDS:
        return kind
    if kind is None:
        c.add(doc.loc(()), "kind", "E102", "missing required key 'kind'", f"one of: {', '.join(KINDS)}")
    elif not isinstance(kind, str):
        c.add(
            doc.loc(("kind",)),
            "kind",
            "E103",
            f"expected a string, got {describe(kind)}",
            f"one of: {', '.join(KINDS)}",
        )
    else:
        c.add(doc.loc(("kind",)), "kind", "E104", f"unknown kind {kind!r}", did_you_mean(kind, KINDS))
    return None


def validate(src: Sources, fingerprint: str) -> Validated:
    """Check every document and every cross-file rule; raise SpecErrors with all problems."""
    c = Collector()
    c.extend(src.errors)
    by_kind: dict[str, list[Doc]] = {k: [] for k in KINDS}
    for doc in src.docs:
        kind = _kind_of(c, doc)
        if kind is not None:
            by_kind[kind].append(doc)
    names = declared(src, KINDS)

    projects = by_kind["project"]
    if not projects:
        c.add(
            Loc(PROJECT_FILE, 1, 1),
            "",
            "E131",
            "no project spec",
            "create specs/project.yaml with `kind: project`",
        )
        c.raise_if_any()
    if len(projects) > 1:
        # Which one is meant is unknowable: validating the others against either would blame the
        # wrong files, so this is the one error (with the files' own syntax errors).
        canonical = [d for d in projects if d.file == PROJECT_FILE]
        blamed = next(d for d in projects if d not in canonical)
        c.add(
            blamed.loc(("kind",)),
            "kind",
            "E132",
            f"{len(projects)} project specs: {', '.join(d.file for d in projects)}",
            f"a project has exactly one; keep {PROJECT_FILE} and change the other's `kind:`"
            if canonical
            else "a project has exactly one; keep one and change the others' `kind:`",
        )
        c.raise_if_any()
    pdoc = projects[0]
    project: ProjectDoc | None = model_of(c, pdoc, ProjectDoc)
    if project is None:
        # Without a project the cross-file rules cannot run; each file's own shape still can.
        for kind, docs in by_kind.items():
            for doc in docs if kind != "project" else ():
                c.extend(rawcheck.check(doc, KINDS[kind]) if doc.data.get("extends") is None else [])
        c.raise_if_any()
    assert project is not None
    levels = _levels(c, pdoc, project)

    kinds: dict[str, CheckKindDoc] = {}
    kind_docs: dict[str, Doc] = {}
    for ident, doc in _by_id(c, by_kind["check-kind"], "check kind").items():
        spec = model_of(c, doc, CheckKindDoc)
        if spec is not None:
            kinds[ident] = spec
            kind_docs[ident] = doc
            rules.check_kind(c, doc, spec, project)
    agents: dict[str, AgentSpec] = {}
    agent_docs: dict[str, Doc] = {}
    flags: dict[str, tuple[bool, str]] = {}
    scripts: dict[str, agentargs.Script] = {}
    for ident, doc in _resolve_extends(c, _by_id(c, by_kind["agent"], "agent"), "agent", names).items():
        spec = model_of(c, doc, AgentDoc)
        if spec is None:
            continue
        if spec.adapter is None:
            c.add(doc.loc(()), "adapter", "E102", "missing required key 'adapter'")
            continue
        if spec.adapter == "command" and not spec.command:
            c.add(
                doc.loc(("adapter",)),
                "command",
                "E102",
                "adapter 'command' needs `command:` (the shell command)",
            )
        rules.adapter(c, doc, spec.adapter, src.adapters)
        host_files: dict[str, str] = {}
        if spec.adapter == "command" and spec.command:
            for path in named_host_files(spec.command):
                found = src.inputs.host.get(path)  # read by the load stage
                if found is None:
                    c.add(
                        doc.loc(("command",)),
                        "command",
                        "E239",
                        f"the command names {path}, which does not exist on this machine",
                        "the agent runs in a sandbox that shows a host file only when it exists: fix the path",
                    )
                else:
                    host_files[path] = found
        agents[ident] = AgentSpec(
            id=ident,
            adapter=spec.adapter,
            command=spec.command,
            host_files=host_files,
            args=spec.args or {},
            model=spec.model,
            version=spec.version,
            env=spec.env or {},
            requires=tuple(spec.requires or ()),
            sanity=spec.sanity,
        )
        agent_docs[ident] = doc
        script = agentargs.check(c, doc, spec.adapter, spec.args or {}, src.inputs)
        if script is not None:
            scripts[ident] = script
        flags[ident] = (spec.runnable is not False, spec.reason or "")
        if spec.runnable is False and not spec.reason:
            c.add(doc.loc(("runnable",)), "reason", "E102", "a non-runnable agent needs a `reason:`")

    defaults = _defaults_doc(pdoc, project)
    matrices: dict[str, MatrixIn] = {}
    for ident, doc in _resolve_extends(c, _by_id(c, by_kind["matrix"], "matrix"), "matrix", names).items():
        merged = overlay(defaults, doc)
        spec = model_of(c, merged, MatrixDoc)
        if spec is None:
            continue
        named = spec.limits.model_dump(exclude_none=True) if spec.limits else {}
        limits = Limits(**{k: None if v == LIMITS_OFF else v for k, v in named.items()})
        options = Options(**(spec.options.model_dump(exclude_none=True) if spec.options else {}))
        _isolation(c, merged, options.isolation)
        matrices[ident] = MatrixIn(spec, merged, limits, options)

    # Read by the grader at grade time; validated here so a typo is a positioned spec error.
    exp_docs = _by_id(c, by_kind["expectation"], "expectation")
    expectations = expectation_library(c, exp_docs, levels)
    _prices(c, by_kind["prices"])

    scen_docs = _by_id(c, by_kind["scenario"], "scenario")
    scen = scenarios.build_all(
        c,
        _resolve_extends(c, scen_docs, "scenario", names),
        src,
        project,
        kinds,
        expectations,
        levels,
        names,
        kind_docs,
    )

    result = Validated(
        project=project,
        project_doc=pdoc,
        levels=levels,
        agents=agents,
        agent_docs=agent_docs,
        agent_flags=flags,
        kinds=kinds,
        kind_docs=kind_docs,
        matrices=matrices,
        scenarios=scen,
        fingerprint=fingerprint,
        declared=names,
        input_hashes=dict(src.inputs.hashes),
        input_folders=src.inputs.folders,
        scripts=scripts,
        absent=src.inputs.absent,
        outside=src.inputs.outside,
    )
    rules.cross_file(c, result)
    c.raise_if_any()
    return result
