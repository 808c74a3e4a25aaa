"""report.md from a Summary (Jinja2 template under templates/)."""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from collections.abc import Callable
from itertools import groupby
from pathlib import Path
from typing import Any

import jinja2

from harness.report import spend
from harness.report.fmt import FILTERS, money, num
from harness.report.summary import SectionRow, Summary, Uplift

TEMPLATES = Path(__file__).parent / "templates"
METHOD = (
    "Paired on (scenario, agent, trial); uplift = rate − control rate over the pairs. Interval and p come from "
    "one test: the mean paired difference, its variance cluster-robust over scenarios (CR2) and never below a "
    "small-sample floor, Student's t with scenarios − 1 df. McNemar p: the exact test on the discordant pairs, "
    "which ignores scenarios (secondary)."
)
"""The caption of every uplift table (method details: harness/report/inference.py, docs/report.md)."""


@functools.cache
def environment(*, html: bool) -> jinja2.Environment:
    """The Jinja2 environment of the report templates (strict, sorted data in, no logic out).

    One per process: it keeps its compiled templates. A new one each time compiled the run
    viewer's template for every trial a matrix graded (half a second each on a loaded machine).
    Compiled templates are also kept on disk between processes (jinja2's bytecode cache, in a
    folder of this user's that jinja2 checks is private; keyed by the template's source), so a
    command does not compile the page templates anew each time it starts."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        bytecode_cache=_bytecode_cache(),
        undefined=jinja2.StrictUndefined,
        autoescape=html,
        keep_trailing_newline=True,
        trim_blocks=False,
    )
    env.filters.update(FILTERS)
    return env


class _Cache(jinja2.FileSystemBytecodeCache):
    """A bytecode cache that never costs a render: a file it cannot read or write is compiled anew."""

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        with contextlib.suppress(OSError, EOFError, ValueError):
            super().load_bytecode(bucket)

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        with contextlib.suppress(OSError):
            super().dump_bytecode(bucket)


def _bytecode_cache() -> jinja2.BytecodeCache | None:
    """The user's own cache folder (`$XDG_CACHE_HOME/assay/jinja2`, else `~/.cache/...`), private to
    them (made 0700; one that others may write is not used). Not the temporary folder: a runner
    points that into its run tree's scratch, which goes with the tree."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    folder = base / "assay" / "jinja2"
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        st = folder.stat()
    except (OSError, RuntimeError):
        return None
    if st.st_uid != os.geteuid() or st.st_mode & 0o077:
        return None
    return _Cache(str(folder))


_COMPILING = threading.Lock()


def template(name: str, *, html: bool) -> jinja2.Template:
    """A template of `environment`, compiled once per process: worker threads that each write a run's
    page at once would otherwise all compile it (a tenth of a second each)."""
    with _COMPILING:
        return environment(html=html).get_template(name)


def _is_output(row: SectionRow) -> bool:
    return "output" in row.key or "bytes" in row.key


SEVERITY = {"error": 0, "warning": 1, "info": 2}
"""Diagnostics are listed most serious first (stable within a severity)."""


def cost_pair(summary: Summary) -> Callable[[Uplift, str], str]:
    """`$0.0061 vs $0.0046` (treatment vs control) per run or per solved task; tokens where unpriced."""
    rows = {(g.version, g.agent, g.condition): g for g in summary.groups if g.by == "condition"}

    def pair(u: Uplift, per: str) -> str:
        t, c = rows.get((u.version, u.agent, u.condition)), rows.get((u.version, u.agent, u.control))
        if t is None or c is None:
            return "—"
        usd = t.cost.cost_per_run is not None and c.cost.cost_per_run is not None
        field = ("cost_" if usd else "tokens_") + ("per_run" if per == "run" else "per_usable")
        a, b = getattr(t.cost, field), getattr(c.cost, field)
        fmt = money if usd else num
        return f"{fmt(a)} vs {fmt(b)}{'' if usd else ' tok'}" if a is not None or b is not None else "—"

    return pair


def context(summary: Summary) -> dict[str, Any]:
    """What every renderer draws: the summary plus a few lookups."""
    tool = [r for r in summary.sections if r.section == "tool_use"]
    findings = sorted(summary.findings, key=lambda f: f.layer)
    return {
        "s": summary,
        "h": summary.header,
        "hv": bool(summary.header.versions),
        "uplift_rows": [u for u in summary.uplifts if u.scenario is None and u.split is None],
        "cost_pair": cost_pair(summary),
        "diagnostics": sorted(summary.diagnostics, key=lambda d: SEVERITY[d.severity]),
        "splits_shown": len({u.split for u in summary.uplifts if u.split is not None}) > 1,
        "metric_rows": sum(len(c.metrics) for c in summary.cells),
        "method": METHOD,
        "scenario_count": sum(1 for u in summary.uplifts if u.scenario is not None),
        "split_uplifts": [u for u in summary.uplifts if u.split is not None],
        "scenario_uplift": {
            (u.version, u.agent, u.condition, u.scenario): u for u in summary.uplifts if u.scenario
        },
        "conditions": [g for g in summary.groups if g.by == "condition"],
        "budget_shown": any(g.counts.budget_stops for g in summary.groups if g.by == "condition"),
        "spend_views": [spend.view(r) for r in summary.rounds],
        "section_tables": [
            ("Tool use by subcommand", [r for r in tool if not _is_output(r)]),
            ("Output size per tool command", [r for r in tool if _is_output(r)]),
            ("Friction", [r for r in summary.sections if r.section == "friction"]),
        ],
        "findings_by_layer": [
            (layer, list(items)) for layer, items in groupby(findings, key=lambda f: f.layer)
        ],
    }


def render_markdown(summary: Summary) -> str:
    """The whole report.md."""
    text = template("report.md.j2", html=False).render(context(summary))
    lines = [line.rstrip() for line in text.splitlines()]
    out: list[str] = []
    for line in lines:
        if line == "" and out and out[-1] == "":
            continue
        out.append(line)
    return "\n".join(out).strip() + "\n"
