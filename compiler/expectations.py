"""Expectations: the library (`kind: expectation`) and a scenario's `expectations:` entries.

The grader evaluates them (harness/grade/expectations.py); everything it would refuse is
refused here first, with a position: the models type every predicate's parameters, and
this module adds what a model cannot say — exactly one predicate per map (at every depth
of `all`/`any`/`not`), and `when.levels` naming factors and levels the project has.
A scenario's entries are inlined into its jobs, a name replaced by the library spec.
"""

from __future__ import annotations

from typing import Any

from compiler.declared import Declared
from compiler.errors import Collector, did_you_mean
from compiler.ids import check_slug
from compiler.rawcheck import model_of
from compiler.specs.grading import PREDICATES, ExpectationDoc, ExpectationEntry, PredicateDoc, WhenDoc
from compiler.yamlio import Doc, Path_, dotted

Levels = dict[str, dict[str, dict[str, Any]]]


def _one_predicate(c: Collector, doc: Doc, path: Path_, pred: PredicateDoc) -> None:
    """Exactly one predicate in this map and in every map nested under all/any/not."""
    given = pred.given()
    if len(given) != 1:
        c.add(
            doc.loc(path),
            dotted(path),
            "E243",
            f"an expectation needs exactly one predicate (got {', '.join(given) or 'none'})",
            f"one of: {', '.join(PREDICATES)}",
        )
    for key in ("all", "any"):
        for i, sub in enumerate(getattr(pred, key) or ()):
            _one_predicate(c, doc, (*path, key, i), sub)
    if pred.not_ is not None:
        _one_predicate(c, doc, (*path, "not"), pred.not_)


def _when(c: Collector, doc: Doc, path: Path_, when: WhenDoc | None, levels: Levels) -> None:
    """`when.levels` names factors and levels of the project."""
    for factor, wanted in ((when.levels if when else None) or {}).items():
        fp = (*path, "levels", factor)
        if factor not in levels:
            c.add(
                doc.loc(fp, key=True),
                dotted(fp),
                "E223",
                f"unknown factor '{factor}'",
                did_you_mean(factor, levels),
            )
            continue
        for j, level in enumerate([wanted] if isinstance(wanted, str) else wanted):
            lp = fp if isinstance(wanted, str) else (*fp, j)
            if level not in levels[factor]:
                c.add(
                    doc.loc(lp),
                    dotted(lp),
                    "E224",
                    f"unknown level '{level}' of factor '{factor}'",
                    did_you_mean(level, levels[factor]),
                )


def library(c: Collector, docs: dict[str, Doc], levels: Levels) -> dict[str, dict[str, Any]]:
    """The project's expectation specs by id, as the grader reads them."""
    out: dict[str, dict[str, Any]] = {}
    for ident, doc in docs.items():
        exp: ExpectationDoc | None = model_of(c, doc, ExpectationDoc)
        if exp is None:
            continue
        before = len(c.errors)
        _one_predicate(c, doc, (), exp)
        _when(c, doc, ("when",), exp.when, levels)
        if len(c.errors) == before:
            out[ident] = exp.model_dump(by_alias=True, exclude_none=True, exclude={"kind", "meta"})
    return out


def entries(
    c: Collector,
    doc: Doc,
    raw: list[Any],
    lib: dict[str, dict[str, Any]],
    levels: Levels,
    names: Declared,
) -> tuple[dict[str, Any], ...]:
    """A scenario's `expectations:` in job form: a name (or `ref:`) replaced by its library spec."""
    out: list[dict[str, Any]] = []
    for i, item in enumerate(raw):
        path: Path_ = ("expectations", i)
        entry = ExpectationEntry(ref=item) if isinstance(item, str) else item
        assert isinstance(entry, ExpectationEntry)
        _when(c, doc, (*path, "when"), entry.when, levels)
        if entry.id is not None:
            check_slug(c, doc, (*path, "id"), entry.id, "expectation id")
        own = entry.model_dump(by_alias=True, exclude_none=True, exclude={"ref", "name", "meta"})
        name = entry.ref or entry.name
        if name is None:
            _one_predicate(c, doc, path, entry)
            out.append(own)
            continue
        if name not in lib:
            if names.unknown("expectation", name, lib):  # one with errors of its own is reported at its file
                c.add(
                    doc.loc(path if isinstance(item, str) else (*path, "ref" if entry.ref else "name")),
                    dotted(path),
                    "E242",
                    f"unknown expectation '{name}'",
                    did_you_mean(name, lib),
                )
            continue
        merged = {**lib[name], **own}
        given = [p for p in PREDICATES if p in merged]
        if len(given) != 1:
            c.add(
                doc.loc(path),
                dotted(path),
                "E243",
                f"overriding '{name}' gives {len(given)} predicates ({', '.join(given)}); an expectation has one",
                "override its `when` or `description`, or write an inline expectation instead",
            )
            continue
        out.append(merged)
    return tuple(out)
