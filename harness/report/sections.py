"""Reading the grade's sections generically: numeric leaves, expectation verdicts, notable exits,
authority disagreements. Typed sections arrive as dicts (model_dump), untyped ones from `details`;
both go through the same functions, so a grader section added later still shows up."""

from __future__ import annotations

from typing import Any, NamedTuple

NUMERIC_SECTIONS = ("tool_use", "friction")
"""Sections whose numeric leaves are summed per condition (the tool-use and friction tables)."""


def flatten(value: Any, prefix: str = "") -> list[tuple[str, float]]:
    """Numeric leaves of a JSON value as (dotted path, number); lists of records are skipped."""
    if isinstance(value, bool):
        return [(prefix, float(value))] if prefix else []
    if isinstance(value, int | float):
        return [(prefix, float(value))] if prefix else []
    if isinstance(value, dict):
        out: list[tuple[str, float]] = []
        for k, v in value.items():
            out.extend(flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return []


def expectation_verdicts(value: Any) -> list[tuple[str, str]]:
    """(id, verdict) pairs from a dict {id: verdict | {verdict|outcome|status}} or a list of records."""
    items: list[tuple[str, Any]] = []
    if isinstance(value, dict):
        items = list(value.items())
    elif isinstance(value, list):
        items = [(str(v.get("id") or v.get("name")), v) for v in value if isinstance(v, dict)]
    out: list[tuple[str, str]] = []
    for key, v in items:
        if isinstance(v, dict):
            v = v.get("verdict") or v.get("outcome") or v.get("status")
        if isinstance(v, bool):
            v = "pass" if v else "fail"
        if isinstance(v, str):
            out.append((str(key), v.lower()))
    return out


def _describe(item: Any) -> str:
    if isinstance(item, dict) and "exit" in item and "argv" in item:
        argv = item["argv"]
        return f"`{' '.join(argv) if isinstance(argv, list) else argv}` exited {item['exit']}"
    if isinstance(item, dict):
        return ", ".join(f"{a}={b}" for a, b in sorted(item.items()))
    return str(item)


def disagreements(value: Any) -> list[str]:
    items = value if isinstance(value, list) else [value]
    out = []
    for item in items:
        if isinstance(item, dict) and "direction" in item:
            diag = "; ".join(
                str(item.get(k) or "") for k in ("accepts_diagnostics", "rejects_diagnostics")
            ).strip("; ")
            out.append(f"{item['direction']}" + (f" ({diag[:160]})" if diag else ""))
        elif item:
            out.append(str(item)[:200])
    return out


def notable_exits(tool_use: Any) -> list[str]:
    found: list[str] = []
    if isinstance(tool_use, dict):
        for k, v in tool_use.items():
            if "notable" in str(k) and v:
                items = v if isinstance(v, list) else [v]
                found.extend(_describe(i) for i in items)
            elif isinstance(v, dict):
                found.extend(notable_exits(v))
    return found


class SectionDigest(NamedTuple):
    """What the aggregates read from a run's sections, computed once per run (and cached with its facts)."""

    disagreements: tuple[str, ...]
    notable_exits: tuple[str, ...]
    numeric: tuple[tuple[str, tuple[tuple[str, float], ...]], ...]
    """(section, its numeric leaves) for each numeric section the run reported."""
    expectations: tuple[tuple[str, str], ...]


def digest(sections: dict[str, Any]) -> SectionDigest:
    """A run's sections read once: disagreements, notable exits, numeric leaves, expectation verdicts."""
    return SectionDigest(
        tuple(disagreements(sections.get("disagreement"))),
        tuple(notable_exits(sections.get("tool_use"))),
        tuple(
            (name, tuple(flatten(sections[name])))
            for name in NUMERIC_SECTIONS
            if sections.get(name) is not None
        ),
        tuple(expectation_verdicts(sections.get("expectations"))),
    )
