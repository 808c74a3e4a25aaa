"""Scenarios: folder rules, prompts (templates), steps, checks and negatives in their job form."""

from __future__ import annotations

import posixpath
from typing import Any

from compiler import sandbox
from compiler.checks import resolve_check
from compiler.contract import CheckSpec, Negative, ScenarioJob, Step
from compiler.declared import Declared
from compiler.errors import Collector, did_you_mean
from compiler.expectations import Levels
from compiler.expectations import entries as expectation_entries
from compiler.ids import check_slug
from compiler.load import Sources, not_utf8
from compiler.paths import not_a_link_out, rel_path, ws_path
from compiler.rawcheck import model_of
from compiler.render import render_field
from compiler.resolved import ScenarioIn
from compiler.specs import CheckKindDoc, ProjectDoc, ScenarioDoc
from compiler.yamlio import Doc, Path_, dotted


def _context(spec: ScenarioDoc, project: ProjectDoc, folder: str) -> dict[str, Any]:
    return {
        "scenario": {**spec.model_dump(exclude={"checks", "negatives", "meta"}), "folder": folder},
        "project": {"name": project.name, "languages": project.languages},
    }


def _tree(src: Sources, folder: str, sub: str) -> list[str]:
    return src.inputs.under(f"{folder}/{sub}")


def _text(c: Collector, src: Sources, doc: Doc, path: Path_, rel: str | None, what: str) -> str | None:
    if rel is None or not not_a_link_out(c, doc.loc(path), path, rel, src.inputs.outside):
        return None
    data = src.inputs.data.get(rel)
    if data is None:
        c.add(doc.loc(path), dotted(path), "E230", f"{what} file '{rel}' not found")
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        c.extend([not_utf8(rel, data, exc)])
        return None


def _step_name(c: Collector, doc: Doc, i: int, name: str | None, taken: set[str]) -> str:
    """A step's name (default step-NN): a slug, since it names the step's folders, and unique."""
    path: Path_ = ("steps", i, "name") if name is not None else ("steps", i)
    name = name if name is not None else f"step-{i + 1:02d}"
    if check_slug(c, doc, path, name, "step name") and name in taken:
        c.add(doc.loc(path), dotted(path), "E111", f"duplicate step name '{name}'", "name each step once")
    return name


def _steps(
    c: Collector, doc: Doc, spec: ScenarioDoc, src: Sources, folder: str, ctx: dict[str, Any]
) -> list[Step]:
    """Sessions of a multi-session scenario: prompts rendered, evidence files checked."""
    steps: list[Step] = []
    for i, st in enumerate(spec.steps or []):
        sp = ("steps", i)
        pf = rel_path(c, doc, (*sp, "prompt"), st.prompt)
        raw = _text(c, src, doc, (*sp, "prompt"), pf, "step prompt")
        steps.append(
            Step(
                name=_step_name(c, doc, i, st.name, {s.name for s in steps}),
                prompt=render_field(c, doc, (*sp, "prompt"), raw or "", ctx, file=pf),
                evidence={
                    dest: _evidence(c, doc, (*sp, "evidence", dest), source, src, folder)
                    for dest, source in (st.evidence or {}).items()
                },
                fresh_repo=bool(st.fresh_repo),
            )
        )
    return steps


def _evidence(c: Collector, doc: Doc, path: Path_, source: str, src: Sources, folder: str) -> str:
    """One evidence file of a step (workspace path -> project file): it exists, inside the project,
    and shadows no seed file."""
    dest = str(path[-1])
    ws_path(c, doc, path, dest)
    rel = rel_path(c, doc, path, source)
    if rel is None or not not_a_link_out(c, doc.loc(path), path, rel, src.inputs.outside):
        return rel or source
    if rel not in src.inputs.data:
        c.add(doc.loc(path), dotted(path), "E230", f"evidence file '{rel}' not found")
    if f"{folder}/seed/{dest}" in src.inputs.hashes:
        c.add(doc.loc(path, key=True), dotted(path), "E214", f"evidence '{dest}' collides with a seed file")
    return rel


def _checks(
    c: Collector,
    doc: Doc,
    spec: ScenarioDoc,
    kinds: dict[str, CheckKindDoc],
    ctx: dict[str, Any],
    project: ProjectDoc,
    kind_docs: dict[str, Doc],
    names: Declared,
) -> tuple[list[CheckSpec], list[Path_], dict[str, int]]:
    """Checks resolved to built-in kinds, their key paths, and check id -> index."""
    checks: list[CheckSpec] = []
    paths: list[Path_] = []
    seen: dict[str, int] = {}
    for i, check_raw in enumerate(spec.checks or []):
        chk = resolve_check(c, doc, i, check_raw, kinds, ctx, kind_docs, names)
        if chk is None or not check_slug(c, doc, ("checks", i, "id"), chk.id, "check id"):
            continue
        if chk.id in seen:
            c.add(
                doc.loc(("checks", i, "id")),
                dotted(("checks", i, "id")),
                "E112",
                f"duplicate check id '{chk.id}'",
                f"first used by checks[{seen[chk.id]}]",
            )
            continue
        if chk.authority is not None and chk.authority not in project.authorities:
            c.add(
                doc.loc(("checks", i, "authority")),
                dotted(("checks", i, "authority")),
                "E221",
                f"unknown authority '{chk.authority}'",
                did_you_mean(chk.authority, project.authorities),
            )
        seen[chk.id] = i
        checks.append(chk)
        paths.append(("checks", i))
    if not spec.checks:  # `checks: []` is reported at its key, a missing `checks:` at the document
        c.add(
            doc.loc(("checks",), key=True),
            "checks",
            "E250",
            "the scenario has no checks",
            "a scenario needs at least one check",
        )
    return checks, paths, seen


def _judges(checks: list[CheckSpec], project: ProjectDoc) -> dict[str, dict[str, Any]]:
    """The project's configurations of the judges these checks name; a name the project does
    not configure stays out, and its check grades `unavailable` (the judge is off by default)."""
    names = {str(chk.params.get("model", "default")) for chk in checks if chk.kind == "judge"}
    return {
        name: project.judges[name].model_dump(exclude_none=True)
        for name in sorted(names)
        if name in project.judges
    }


def _negatives(
    c: Collector,
    doc: Doc,
    spec: ScenarioDoc,
    src: Sources,
    folder: str,
    own: str,
    seen: dict[str, int],
    kinds_of: dict[str, str],
) -> list[Negative]:
    """Negatives: each names known checks (or tests of a pytest check) and has an overlay folder or
    a patch; no stray overlay folders."""
    negatives: list[Negative] = []
    neg_dir = "negative" if own.endswith(".json") and _tree(src, folder, "negative") else "negatives"
    for name, neg in (spec.negatives or {}).items():
        np_: Path_ = ("negatives", name)
        if not check_slug(c, doc, np_, name, "negative name", key=True):
            continue  # it names the overlay's folder: nothing else about it can be right
        if not neg.fails:
            c.add(
                doc.loc((*np_, "fails")),
                dotted((*np_, "fails")),
                "E241",
                "a negative must name at least one check it fails",
            )
        for j, named in enumerate(neg.fails):
            cid, _, test = named.partition("::")  # `<check>::<test id>`: one test of a pytest check
            if test and cid in seen and kinds_of.get(cid) != "pytest":
                c.add(
                    doc.loc((*np_, "fails", j)),
                    dotted((*np_, "fails", j)),
                    "E240",
                    f"'{named}' names a test, but check '{cid}' is no pytest check",
                    "name the check alone",
                )
            if cid not in seen and cid not in {
                ch.get("id")
                for ch in spec.checks or []
                if isinstance(ch, dict) and isinstance(ch.get("id"), str)
            }:
                c.add(
                    doc.loc((*np_, "fails", j)),
                    dotted((*np_, "fails", j)),
                    "E240",
                    f"unknown check id '{cid}'",
                    did_you_mean(cid, seen),
                )
        pp = (*np_, "patch")
        patch = rel_path(c, doc, pp, neg.patch) if neg.patch else None
        if patch is not None and not not_a_link_out(c, doc.loc(pp), pp, patch, src.inputs.outside):
            continue
        if patch is not None and patch not in src.inputs.data:
            c.add(
                doc.loc((*np_, "patch")),
                dotted((*np_, "patch")),
                "E233",
                f"negative patch '{patch}' not found",
            )
        has_dir = bool(_tree(src, folder, f"{neg_dir}/{name}"))
        if not has_dir and patch is None:
            c.add(
                doc.loc(np_, key=True),
                dotted(np_),
                "E233",
                f"negative '{name}' has no overlay folder '{folder}/{neg_dir}/{name}/' and no patch",
            )
        negatives.append(
            Negative(
                name=name,
                fails=tuple(neg.fails),
                dir=f"{folder}/{neg_dir}/{name}" if has_dir else None,
                patch=patch,
                # Seed 000: "negative overlays" are overlays like the reference, on the seed alone.
                base="seed" if own.endswith(".json") else "reference",
            )
        )
    declared = set(spec.negatives or {})
    for rel in sorted({r.split("/")[3] for r in _tree(src, folder, neg_dir) if r.count("/") >= 4}):
        if rel not in declared:
            c.add(
                doc.loc(("negatives",) if spec.negatives else ()),
                "negatives",
                "E234",
                f"overlay folder '{folder}/{neg_dir}/{rel}/' is not declared under negatives:",
                f"add `{rel}: {{ fails: [...] }}`",
            )
    return negatives


def build(
    c: Collector,
    doc: Doc,
    src: Sources,
    project: ProjectDoc,
    kinds: dict[str, CheckKindDoc],
    expectations: dict[str, dict[str, Any]],
    levels: Levels,
    names: Declared,
    kind_docs: dict[str, Doc],
) -> ScenarioIn | None:
    """One scenario in its job form; None when it has errors (collected in `c`)."""
    spec: ScenarioDoc | None = model_of(c, doc, ScenarioDoc)
    if spec is None:
        return None
    own = doc.values.get((), doc.loc(())).file
    folder = posixpath.dirname(doc.file)
    if spec.id != posixpath.basename(folder):
        c.add(
            doc.loc(("id",)),
            "id",
            "E202",
            f"scenario id '{spec.id}' differs from its folder name '{posixpath.basename(folder)}'",
            "rename the folder or the id; they must be equal",
        )
    if spec.language is not None and spec.language not in project.languages:
        c.add(
            doc.loc(("language",)),
            "language",
            "E220",
            f"language '{spec.language}' is not declared supported by the project",
            f"add it to `languages:` in {project.name}'s project file"
            if not project.languages
            else did_you_mean(spec.language, project.languages),
        )
    ctx = _context(spec, project, folder)
    prompt, prompt_file = "", None
    if spec.prompt is not None or not spec.steps:  # a multi-session scenario's prompts are its steps'
        prompt_file = rel_path(
            c,
            doc,
            ("prompt",),
            spec.prompt or "prompt.md",
            base_file=doc.loc(("prompt",)).file if spec.prompt else own,
        )
        prompt_raw = _text(c, src, doc, ("prompt",), prompt_file, "prompt")
        prompt = (
            render_field(c, doc, ("prompt",), prompt_raw, ctx, file=prompt_file)
            if prompt_raw is not None
            else ""
        )
    steps = _steps(c, doc, spec, src, folder, ctx)
    if steps and spec.prompt is None:
        prompt = steps[0].prompt
    if not _tree(src, folder, "seed"):
        c.add(
            doc.loc(()),
            "seed",
            "E231",
            f"missing seed folder '{folder}/seed/' (the initial workspace)",
            "add at least one file (a .gitkeep will do)",
        )
    if not _tree(src, folder, "reference"):
        c.add(
            doc.loc(()),
            "reference",
            "E232",
            f"missing reference folder '{folder}/reference/'",
            "the reference calibrates the checks",
        )
    entry = [spec.entry] if isinstance(spec.entry, str) else list(spec.entry or [])
    for key, values in (
        ("entry", entry),
        ("watch", spec.watch or []),
        ("writable", spec.writable or []),
    ):
        for j, v in enumerate(values):
            ws_path(c, doc, (key,) if key == "entry" and isinstance(spec.entry, str) else (key, j), v)
    box = sandbox.resolve(c, doc, spec, src)
    checks, paths, seen = _checks(c, doc, spec, kinds, ctx, project, kind_docs, names)
    sandbox.check_paths(c, doc, paths, checks, spec)
    negatives = _negatives(c, doc, spec, src, folder, own, seen, {k.id: k.kind for k in checks})
    job = ScenarioJob(
        id=spec.id,
        root=folder,
        family=spec.family or spec.id,
        language=spec.language,
        split=spec.split,
        source=spec.source,
        reference_note=spec.reference_note,
        seed=f"{folder}/seed",
        reference=f"{folder}/reference",
        grader=f"{folder}/grader" if _tree(src, folder, "grader") else None,
        negatives=tuple(negatives),
        entry=tuple(entry),
        watch=tuple(spec.watch or entry),
        writable=tuple(spec.writable or ("**",)),
        runtime_only=tuple(spec.runtime_only or ()),
        stability_risk=bool(spec.stability_risk),
        prompt=prompt,
        steps=tuple(steps),
        checks=tuple(checks),
        expectations=expectation_entries(c, doc, list(spec.expectations or ()), expectations, levels, names),
        notable_exits=tuple(spec.notable_exits) if spec.notable_exits is not None else (3, 4),
        forbid_words=tuple(sorted({*(spec.forbid_words or ()), *project.forbid_words})),
        state_setup=tuple(spec.state_setup or ()),
        judges=_judges(checks, project),
        tags=tuple(spec.tags or ()),
        workdir=box.workdir,
        mounts=box.mounts,
        environment=box.environment,
        env=box.env,
        limits=box.limits,
    )
    return ScenarioIn(
        job=job, doc=doc, check_paths=tuple(paths), files=src.inputs.under(folder), prompt_file=prompt_file
    )


def build_all(
    c: Collector,
    docs: dict[str, Doc],
    src: Sources,
    project: ProjectDoc,
    kinds: dict[str, CheckKindDoc],
    expectations: dict[str, dict[str, Any]],
    levels: Levels,
    names: Declared,
    kind_docs: dict[str, Doc],
) -> dict[str, ScenarioIn]:
    """Every scenario that has no errors of its own, by id."""
    out: dict[str, ScenarioIn] = {}
    for ident in sorted(docs):
        built = build(c, docs[ident], src, project, kinds, expectations, levels, names, kind_docs)
        if built is not None:
            out[ident] = built
    return out
