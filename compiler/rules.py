"""Cross-file rules and seed 000's authoring rules, checked after every file is valid alone."""

from __future__ import annotations

import itertools
import posixpath
import re
from collections import defaultdict
from typing import Any

from compiler.checks import default_model
from compiler.errors import Collector, Loc, did_you_mean
from compiler.ids import check_slug
from compiler.rawcheck import check, describe
from compiler.render import TemplateError, template_error, undefined_names
from compiler.resolved import MatrixIn, ScenarioIn, Validated
from compiler.specs import CheckKindDoc, ProjectDoc
from compiler.yamlio import Doc, Path_, dotted

AXES = ("agent", "scenario")
"""Matrix keys besides the factors."""
TEMPLATE_NAMES = ("scenario", "project", "params")
"""What a user kind's run template sees besides its parameters."""


def check_kind(c: Collector, doc: Doc, spec: CheckKindDoc, project: ProjectDoc) -> None:
    """A user kind: one result reader, defaults of their parameters' types, authority known, and a
    run template whose names are its parameters."""
    _result_reader(c, doc, spec)
    for name, param in spec.params.items():
        if param.default is not None:  # a default is of its parameter's type, as a given value is
            c.extend(check(doc, default_model(param.type), {"default": param.default}, ("params", name)))
    if spec.authority is not None and spec.authority not in project.authorities:
        c.add(
            doc.loc(("authority",)),
            "authority",
            "E221",
            f"unknown authority '{spec.authority}'",
            did_you_mean(spec.authority, project.authorities),
        )
    # The run template's syntax and names are the kind's, whichever scenario uses it.
    try:
        unknown = undefined_names(spec.run, {*spec.params, *TEMPLATE_NAMES})
    except TemplateError as exc:
        template_error(c, doc.line_loc(("run",), exc.line), ("run",), str(exc))
        return
    for name, line in unknown:
        template_error(
            c,
            doc.line_loc(("run",), line),
            ("run",),
            f"'{name}' is undefined" + (f" ({did_you_mean(name, spec.params)})" if spec.params else ""),
        )


def _result_reader(c: Collector, doc: Doc, spec: CheckKindDoc) -> None:
    """Exactly one result reader; a count's max_param names an integer parameter of the kind."""
    set_readers = [k for k in ("exit", "count", "json_path") if getattr(spec.result, k) is not None]
    if len(set_readers) > 1:
        c.add(
            doc.loc(("result",)), "result", "E150", f"result has {', '.join(set_readers)}; give exactly one"
        )
    name = spec.result.count.max_param if spec.result.count else None
    path = ("result", "count", "max_param")
    if name is not None and name not in spec.params:
        c.add(
            doc.loc(path),
            dotted(path),
            "E151",
            f"max_param '{name}' is not a parameter of this kind",
            did_you_mean(name, spec.params),
        )
    elif name is not None and spec.params[name].type != "integer":
        c.add(
            doc.loc(path),
            dotted(path),
            "E151",
            f"max_param '{name}' is a parameter of type {spec.params[name].type}",
            "declare it `type: integer`: it is the most findings a check allows",
        )


def adapter(c: Collector, doc: Doc, name: str, builtin: tuple[str, ...] | None) -> None:
    """An agent's adapter: `command`, a dotted module path (found when the trial starts), or a
    built-in short name, which must be one of `builtin` (unchecked when that is unknown)."""
    if builtin is None or name == "command" or "." in name or name in builtin:
        return
    hint = did_you_mean(name, [*builtin, "command"])
    c.add(doc.loc(("adapter",)), "adapter", "E141", f"unknown adapter '{name}'", hint)


def select_scenarios(m: MatrixIn, scenarios: dict[str, ScenarioIn]) -> list[str]:
    """The scenario ids a matrix runs, sorted."""
    sel = m.spec.scenarios
    if sel is None or sel == "all":
        return sorted(scenarios)
    if isinstance(sel, list):
        return [s for s in sel if s in scenarios]

    def listed(v: str | list[str] | None, x: str | None) -> bool:
        return v is None or x in ([v] if isinstance(v, str) else v)

    return sorted(
        s
        for s, sc in scenarios.items()
        if (sel.split is None or sc.job.split == sel.split)
        and listed(sel.family, sc.job.family)
        and listed(sel.language, sc.job.language)
        and (sel.ids is None or s in sel.ids)
        and (
            sel.tags is None
            or bool(set(sc.job.tags) & set([sel.tags] if isinstance(sel.tags, str) else sel.tags))
        )
    )


def matrix_levels(m: MatrixIn, levels: dict[str, dict[str, Any]]) -> dict[str, list[str]]:
    """Factor -> the levels a matrix's product uses (before include)."""
    narrowed = m.spec.factors or {}
    return {f: list(narrowed.get(f, list(lv))) for f, lv in levels.items()}


def _value_ok(c: Collector, doc: Doc, path: Path_, key: str, value: Any, v: Validated, where: str) -> None:
    """A factor/agent/scenario value in a matrix or constraint must exist."""
    values = [value] if not isinstance(value, list) else value
    for j, one in enumerate(values):
        p = (*path, j) if isinstance(value, list) else path
        if key in v.levels:
            choices: Any = v.levels[key]
            what = f"level of factor '{key}'"
        elif key == "agent":
            choices, what = v.agents, "agent"
        elif key == "scenario" and where != "constraint":
            choices, what = v.scenarios, "scenario"
        else:
            continue
        if key not in v.levels and v.declared.broken(key, one, choices):
            continue  # an agent or scenario that exists but has errors of its own, reported at its file
        if not isinstance(one, str) or one not in choices:
            c.add(
                doc.loc(p),
                dotted(p),
                "E224" if key in v.levels else "E222",
                f"unknown {what} {one!r}",
                did_you_mean(str(one), choices),
            )


def _keys_ok(c: Collector, doc: Doc, path: Path_, entry: dict[str, Any], v: Validated, where: str) -> None:
    allowed = [*v.levels, "agent"] + (["scenario"] if where != "constraint" else [])
    for key, value in entry.items():
        kp = (*path, key)
        if key.startswith("x-"):
            continue  # an extension: these keys are matrix keys, so `x-` cannot name one
        if key not in allowed:
            c.add(
                doc.loc(kp, key=True),
                dotted(kp),
                "E223",
                f"unknown {where} key '{key}'",
                did_you_mean(key, allowed),
            )
            continue
        if where == "matrix" and not isinstance(value, str):
            c.add(
                doc.loc(kp),
                dotted(kp),
                "E103",
                f"expected a string, got {describe(value)}",
                "an entry names one value per key; write one entry per value",
            )
            continue
        _value_ok(c, doc, kp, key, value, v, where)


def cross_file(c: Collector, v: Validated) -> None:
    """Every rule that needs more than one file."""
    pdoc = v.project_doc
    for i, con in enumerate(v.project.constraints):
        _keys_ok(c, pdoc, ("constraints", i, "when"), con.when, v, "constraint")
        _keys_ok(c, pdoc, ("constraints", i, "require"), con.require, v, "constraint")
    control = v.project.control.split("/")
    if len(control) != len(v.levels) or any(
        lv not in v.levels[f] for f, lv in zip(v.levels, control, strict=False)
    ):
        c.add(
            pdoc.loc(("control",)),
            "control",
            "E227",
            f"control '{v.project.control}' is not a cell",
            f"levels in factor order: {'/'.join(v.levels)}",
        )
    _level_paths(c, v)
    defaults = [m for m in v.matrices.values() if m.spec.default]
    for extra in defaults[1:]:
        c.add(
            extra.doc.loc(("default",)),
            "default",
            "E271",
            f"a second default matrix (first: {defaults[0].spec.id})",
        )
    if len(v.matrices) > 1 and not defaults:
        first = v.matrices[min(v.matrices)]
        c.add(
            first.doc.loc(()),
            "default",
            "E272",
            f"{len(v.matrices)} matrices and none is the default",
            "mark the one nox bench-<cell> sessions come from with `default: true`",
        )
    for m in v.matrices.values():
        _matrix(c, m, v)
    _families(c, v)
    _forbidden(c, v)


def _level_paths(c: Collector, v: Validated) -> None:
    """Paths a level names (PATH folders, files, links, skill dir) stay inside the project and exist."""
    from compiler.paths import not_a_link_out, rel_path

    doc = v.project_doc
    raw_factors = doc.data.get("factors") or {}

    def present(path: Path_, value: Any) -> None:
        rel = rel_path(c, doc, path, value) if isinstance(value, str) else None
        if rel is not None and not not_a_link_out(c, doc.loc(path), path, rel, v.outside):
            return
        if rel is not None and rel in v.absent:
            c.add(
                doc.loc(path),
                dotted(path),
                "E235",
                f"'{value}' ({rel}) does not exist",
                f"a path is relative to the file that names it ({posixpath.dirname(doc.file) or '.'}/)",
            )

    for factor, levels in raw_factors.items():
        for level, body in (levels or {}).items():
            if not isinstance(body, dict):
                continue
            base = ("factors", factor, level)
            for i, p in enumerate(body.get("path") or []):
                present((*base, "path", i), p)
            for key in ("files", "home_files", "links"):
                for dest, src in (body.get(key) or {}).items():
                    present((*base, key, dest), src)
            if body.get("skill_dir"):
                present((*base, "skill_dir"), body["skill_dir"])


def _matrix(c: Collector, m: MatrixIn, v: Validated) -> None:
    doc = m.doc
    if not m.spec.agents:
        c.add(
            doc.loc(("agents",), key=True),
            "agents",
            "E102",
            "a matrix needs at least one agent id in `agents:`",
        )
    for i, a in enumerate(m.spec.agents or []):
        if v.declared.broken("agent", a, v.agents):
            continue  # the agent exists but has errors of its own, reported at its file
        if a not in v.agents:
            c.add(
                doc.loc(("agents", i)),
                f"agents[{i}]",
                "E222",
                f"unknown agent '{a}'",
                did_you_mean(a, v.agents),
            )
        elif not v.agent_flags[a][0]:
            c.add(
                doc.loc(("agents", i)),
                f"agents[{i}]",
                "E270",
                f"agent '{a}' is not runnable: {v.agent_flags[a][1]}",
                "remove it from the matrix",
            )
    for f, lvls in (m.spec.factors or {}).items():
        if f not in v.levels:
            c.add(
                doc.loc(("factors", f), key=True),
                f"factors.{f}",
                "E223",
                f"unknown factor '{f}'",
                did_you_mean(f, v.levels),
            )
            continue
        _value_ok(c, doc, ("factors", f), f, lvls, v, "matrix")
    for i, cell in enumerate(m.spec.cells or []):
        parts = cell.split("/")
        if len(parts) != len(v.levels) or any(
            p not in v.levels[f] for f, p in zip(v.levels, parts, strict=False)
        ):
            names = ["/".join(c) for c in itertools.product(*(list(lv) for lv in v.levels.values()))]
            c.add(
                doc.loc(("cells", i)),
                f"cells[{i}]",
                "E225",
                f"unknown cell '{cell}'",
                did_you_mean(cell, names) + f" (levels in factor order: {'/'.join(v.levels)})",
            )
        elif m.spec.factors and any(
            p not in m.spec.factors.get(f, [p]) for f, p in zip(v.levels, parts, strict=False)
        ):
            c.add(
                doc.loc(("cells", i)),
                f"cells[{i}]",
                "E226",
                f"cell '{cell}' is outside the matrix's `factors:`",
            )
    if isinstance(m.spec.scenarios, list):
        _value_ok(c, doc, ("scenarios",), "scenario", m.spec.scenarios, v, "matrix")
    for key in ("include", "exclude"):
        for i, entry in enumerate(getattr(m.spec, key) or []):
            _keys_ok(c, doc, (key, i), entry, v, "matrix")
    _version_labels(c, m)


def _version_labels(c: Collector, m: MatrixIn) -> None:
    """Each side of a version comparison has its own slug label (it names its jobs and runs)."""
    first: dict[str, str] = {}
    for name, ver in (m.spec.versions or {}).items():
        path = ("versions", name, "label")
        if check_slug(c, m.doc, path, ver.label, "version label") and ver.label in first:
            c.add(
                m.doc.loc(path),
                dotted(path),
                "E111",
                f"duplicate version label '{ver.label}'",
                f"versions.{first[ver.label]} has it too: each version needs its own label",
            )
        first.setdefault(ver.label, name)


def _families(c: Collector, v: Validated) -> None:
    """One family, one split: a held-out scenario is never a translation of a training one."""
    by_family: dict[str, list[ScenarioIn]] = defaultdict(list)
    for s in v.scenarios.values():
        by_family[s.job.family].append(s)
    for family, members in sorted(by_family.items()):
        splits = sorted({s.job.split or "none" for s in members})
        if len(splits) > 1:
            # The reference is the first scenario (by id) that declares a split; a member without one differs too.
            first = min((s for s in members if s.job.split), key=lambda s: s.job.id)
            for s in members:
                if s.job.split != first.job.split:
                    c.add(
                        s.doc.loc(("split",)),
                        "split",
                        "E261",
                        f"family '{family}' is split across {', '.join(splits)}: '{first.job.id}' is {first.job.split}"
                        + ("" if s.job.split else ", this one has no split"),
                        "scenarios of one family take the same split",
                    )


def _forbidden(c: Collector, v: Validated) -> None:
    """A prompt must not contain the words its scenario, the project or any level it runs under forbids."""
    level_words: dict[str, set[str]] = defaultdict(set)
    for m in v.matrices.values():
        used = matrix_levels(m, v.levels)
        for entry in m.spec.include or []:
            for f in v.levels:
                if isinstance(entry.get(f), str):
                    used[f].append(entry[f])
        words = {
            w
            for f, lvls in used.items()
            for lv in lvls
            for w in v.levels[f].get(lv, {}).get("forbid_words", [])
        }
        for sid in select_scenarios(m, v.scenarios):
            level_words[sid] |= words
    for sid, s in v.scenarios.items():
        forbidden = sorted({*s.job.forbid_words, *level_words.get(sid, set())})
        texts = [(s.prompt_file, s.job.prompt)] + [(None, st.prompt) for st in s.job.steps]
        for file, text in texts:
            for w in forbidden:
                hit = re.search(rf"(?<![\w-]){re.escape(w)}(?![\w-])", text, re.IGNORECASE)
                if hit:
                    line = text.count("\n", 0, hit.start()) + 1
                    col = hit.start() - (text.rfind("\n", 0, hit.start()) + 1) + 1
                    loc = Loc(file, line, col) if file else s.doc.loc(("steps",))
                    c.add(
                        loc,
                        "prompt",
                        "E260",
                        f"the prompt contains the forbidden word '{w}'",
                        "state the requirement in user terms; never name the tool's commands",
                    )
