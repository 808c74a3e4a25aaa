"""From a stream of RunFacts to one Summary: cells, pooled groups, uplift, versions, diagnostics."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from harness.artifacts.names import VERSIONS_FILE
from harness.artifacts.rounds import RoundsRecord, read_rounds
from harness.artifacts.store import FutureSchemaError, read_file
from harness.report.accumulate import GroupAcc, GroupBy
from harness.report.collect import RunFacts, Unreadable
from harness.report.diagnostics import DiagAcc, Evidence
from harness.report.headline import headlines
from harness.report.integrity import Integrity
from harness.report.runlist import Report, RunList
from harness.report.stats import Moments
from harness.report.summary import ControlDrift, Group, Header, Summary, VersionDelta
from harness.report.uplift import Pairs, version_deltas
from harness.report.wallclock import WallClock

GroupKey = tuple[GroupBy, str, str | None, str, str]
"""(by, key, version, agent, condition)."""


LevelOrder = dict[str, dict[str, int]]
"""factor -> level -> its position in the project's declaration."""


class ManifestHints(NamedTuple):
    """What the project's generated/manifest.json adds to the run records (read as plain JSON)."""

    level_order: LevelOrder | None
    sanity: dict[str, str]
    """agent -> `pass` / `fail` for the agents the project marks as sanity bounds today."""


def read_manifest_hints(project: Path | None) -> ManifestHints:
    """Declared level order and sanity agents from the project's manifest, if there is one."""
    none = ManifestHints(None, {})
    if project is None:
        return none
    try:
        data = json.loads((project / "generated" / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return none
    if not isinstance(data, dict):
        return none
    factors, agents = data.get("factors"), data.get("agents")
    order = (
        {
            str(f): {str(lv): i for i, lv in enumerate(levels)}
            for f, levels in factors.items()
            if isinstance(levels, list)
        }
        if isinstance(factors, dict)
        else None
    )
    sanity = {
        str(a): spec["sanity"]
        for a, spec in (agents.items() if isinstance(agents, dict) else ())
        if isinstance(spec, dict) and spec.get("sanity") in ("pass", "fail")
    }
    return ManifestHints(order, sanity)


def read_all_rounds(root: Path) -> list[RoundsRecord]:
    """rounds.json of the tree's matrix (root) or of each matrix under it; an unreadable one is skipped,
    one from a newer assay stops the report (as every record does)."""
    found = []
    for folder in [root, *sorted(p for p in root.iterdir() if p.is_dir())] if root.is_dir() else []:
        try:
            record = read_rounds(folder)
        except FutureSchemaError:
            raise
        except (OSError, ValueError):
            continue
        if record is not None:
            found.append(record)
    return found


def read_versions(root: Path) -> tuple[str | None, str | None]:
    """(baseline, candidate) from versions.json at the tree root, or (None, None) (a damaged one too:
    the report names no version rather than stopping)."""
    path = root / VERSIONS_FILE
    try:
        data = json.loads(read_file(path)[0])
    except (OSError, ValueError):
        return None, None
    if not isinstance(data, dict):
        return None, None
    base, cand = data.get("baseline"), data.get("candidate")
    return (base if isinstance(base, str) else None, cand if isinstance(cand, str) else None)


class Aggregator:
    """Consumes runs one at a time; memory grows with cells, plus each run as the outputs list it."""

    def __init__(self) -> None:
        self.cells: dict[tuple[str | None, str, str, str], GroupAcc] = defaultdict(GroupAcc)
        self.scenario_tags: dict[str, tuple[str, str]] = {}
        self.pairs = Pairs()
        self.diag = DiagAcc()
        self.levels: dict[str, tuple[tuple[str, str], ...]] = {}
        self.control_cells: set[str] = set()
        self.sanity: dict[str, str] = {}
        """agent -> `pass` / `fail`: sanity bounds (run.json `sanity`), kept out of every comparison."""
        self.runs = RunList()
        self.agents: set[str] = set()
        self.scenarios: set[str] = set()
        self.versions: set[str] = set()
        self.wallclock = WallClock()
        self.integrity = Integrity()

    def add(self, run: RunFacts | Unreadable) -> None:
        if isinstance(run, Unreadable):
            self.diag.unreadable.add(run.dir)
            if len(self.diag.unreadable_reasons) < 1000:
                self.diag.unreadable_reasons.setdefault(run.dir, run.reason)
            return
        self.agents.add(run.agent)
        self.scenarios.add(run.scenario)
        if run.version is not None:
            self.versions.add(run.version)
        self.levels.setdefault(run.condition, run.levels)
        if run.control:
            self.control_cells.add(run.condition)
        if run.sanity:
            self.sanity.setdefault(run.agent, run.sanity)
        v, a, c = run.version, run.agent, run.condition
        self.cells[(v, run.scenario, a, c)].add(run)
        if run.scenario not in self.scenario_tags or (run.split or run.family):
            self.scenario_tags[run.scenario] = (run.split or "(none)", run.family or "(none)")
        if run.status == "graded" and not run.sanity:
            self.pairs.add(
                (v, a, run.scenario, run.trial), c, (run.passed, run.usable, run.metrics.get("tokens"))
            )
        self.diag.add(run)
        self.integrity.add(run)
        self.wallclock.add(run.version, run.concurrent, run.dir)
        self.runs.add(
            (
                run.dir,
                v,
                run.scenario,
                a,
                c,
                run.trial,
                run.status,
                run.passed,
                run.usable,
                run.reason,
                run.metrics.get("tokens"),
                run.metrics.get("cost_usd"),
                run.metrics.get("duration_s"),
                run.artifacts,
            )
        )

    def merge(self, other: Aggregator) -> None:
        """Fold in the aggregate of another part of the tree (parallel collection)."""
        for key, acc in other.cells.items():
            self.cells[key].merge(acc)
        for scenario, tags in other.scenario_tags.items():
            if scenario not in self.scenario_tags or tags != ("(none)", "(none)"):
                self.scenario_tags[scenario] = tags
        self.pairs.merge(other.pairs)
        self.diag.merge(other.diag)
        self.integrity.merge(other.integrity)
        self.wallclock.merge(other.wallclock)
        for cond, levels in other.levels.items():
            self.levels.setdefault(cond, levels)
        self.control_cells |= other.control_cells
        for agent, expect in other.sanity.items():
            self.sanity.setdefault(agent, expect)
        self.runs.merge(other.runs)
        self.agents |= other.agents
        self.scenarios |= other.scenarios
        self.versions |= other.versions

    def seal(self) -> None:
        """Render the runs added so far for the outputs (`RunList.seal`): a block is complete."""
        self.runs.seal()

    def _control(self) -> tuple[str | None, str]:
        if not self.control_cells:
            return None, "no run is marked as the control (run.json control: true): rates only, no uplift"
        ordered = sorted(self.control_cells)
        note = (
            ""
            if len(ordered) == 1
            else f"several cells claim to be the control ({', '.join(ordered)}); using {ordered[0]}"
        )
        return ordered[0], note

    def conditions(self, control: str | None, level_order: LevelOrder | None = None) -> list[str]:
        """Control first, then increasing treatment: how many levels differ from the control's, then
        how far down its factors' declared level lists they sit (none < bin < bin+skill), then name.

        level_order comes from the project's manifest; without it a longer level name counts as more
        treatment (bin < bin+skill), which holds for levels that extend one another.
        """
        base = dict(self.levels.get(control, ())) if control else {}

        def rank(factor: str, level: str) -> int:
            if level_order and factor in level_order and level in level_order[factor]:
                return level_order[factor][level]
            return len(level)

        def weight(cond: str) -> tuple[int, int, int, str]:
            levels = dict(self.levels.get(cond, ()))
            differ = sum(1 for f, lv in levels.items() if base.get(f) != lv) if base else 0
            return (0 if cond == control else 1, differ, sum(rank(f, lv) for f, lv in levels.items()), cond)

        return sorted(self.levels, key=weight)

    def pooled(self) -> dict[GroupKey, GroupAcc]:
        """Cells, plus condition / split / family rows pooled from them (each a union of cells).

        Rows never pool across agents: agents often run different subsets of the conditions (an
        oracle only the control), so a pooled row would compare different populations.
        """
        groups: dict[GroupKey, GroupAcc] = defaultdict(GroupAcc)
        for (v, scenario, a, c), acc in self.cells.items():
            split, family = self.scenario_tags.get(scenario, ("(none)", "(none)"))
            groups[("cell", scenario, v, a, c)] = acc
            for key in (
                ("condition", "", v, a, c),
                ("split", split, v, a, c),
                ("family", family, v, a, c),
            ):
                groups[key].merge(acc)
        return groups

    def summary(self, root: Path, *, regraded: bool = False, hints: ManifestHints | None = None) -> Summary:
        """The whole summary, every run in it."""
        return self.report(root, regraded=regraded, hints=hints).full()

    def report(self, root: Path, *, regraded: bool = False, hints: ManifestHints | None = None) -> Report:
        """The summary and, apart, the runs it lists (rendered by `RunList`, never one model per run)."""
        hints = hints or ManifestHints(None, {})
        sanity = {**hints.sanity, **self.sanity}
        control, note = self._control()
        conditions = self.conditions(control, hints.level_order)
        order = {c: i for i, c in enumerate(conditions)}
        baseline, candidate = read_versions(root)
        versions = sorted(self.versions)
        if baseline in versions and candidate in versions:
            versions = [baseline, candidate] + [x for x in versions if x not in (baseline, candidate)]
        vorder = {v: i for i, v in enumerate(versions)}

        def sort_key(k: GroupKey) -> tuple[object, ...]:
            _by, key, v, a, c = k
            return (vorder.get(v, -1) if v else -1, key, a, order.get(c, 1 << 30))

        cells: list[Group] = []
        groups: list[Group] = []
        pooled = self.pooled()
        for k in sorted(pooled, key=sort_key):
            by, key, v, a, c = k
            g = pooled[k].group(by=by, key=key, version=v, agent=a, condition=c, control=c == control)
            (cells if by == "cell" else groups).append(g)
        splits = {s: tags[0] for s, tags in self.scenario_tags.items() if tags[0] != "(none)"}
        uplifts = self.pairs.uplifts(control, conditions, splits, skip=set(sanity)) if control else []
        deltas: list[VersionDelta] = []
        drift: list[ControlDrift] = []
        if control and baseline and candidate:
            deltas = version_deltas(uplifts, baseline, candidate)
            rates = {
                (g.version, g.agent): g.passed
                for g in groups
                if g.by == "condition" and g.control and g.agent not in sanity  # an oracle has no drift
            }
            drift = self.pairs.drift(control, baseline, candidate, rates)
        totals = GroupAcc()
        for acc in self.cells.values():
            totals.merge(acc)
        condition_rows = [g for g in groups if g.by == "condition"]
        header = Header(
            root=str(root.resolve()),
            totals=totals.counts().model_copy(
                update={
                    "runs": totals.runs + self.diag.unreadable.count,
                    "unreadable": self.diag.unreadable.count,
                }
            ),
            min_graded_per_cell=min((c.counts.graded for c in cells), default=0),
            control=control,
            control_note=note,
            conditions=conditions,
            agents=sorted(self.agents),
            scenarios=sorted(self.scenarios),
            versions=versions,
            baseline=baseline,
            candidate=candidate,
            regraded=regraded,
            sanity=dict(sorted((a, e) for a, e in sanity.items() if a in self.agents)),
        )
        summary = Summary(
            header=header,
            headline=headlines(uplifts, groups),
            cells=cells,
            groups=groups,
            uplifts=uplifts,
            version_deltas=deltas,
            control_drift=drift,
            expectations=self.diag.expectation_rows(order),
            tests=self.diag.test_rows(order),
            sections=self.diag.section_rows(
                order, {(g.version, g.agent, g.condition): g.counts.graded for g in condition_rows}
            ),
            diagnostics=self.diag.diagnostics(
                control=control,
                control_note=note,
                cells=cells,
                uplifts=uplifts,
                condition_rows=condition_rows,
                sanity=sanity,
            )
            + self.integrity.diagnostics(skip=set(sanity))
            + self.wallclock.diagnostics(baseline, candidate),
            findings=self.diag.finding_rows(),
            runs=[],
            rounds=read_all_rounds(root),
        )
        return Report(summary, self.runs)


CACHED = (Aggregator, GroupAcc, Moments, DiagAcc, Evidence, Pairs, Integrity, WallClock, RunList)
"""The classes a cached block aggregate (`report.cached`) is made of."""


def summarize(runs: Iterable[RunFacts | Unreadable], root: Path, *, regraded: bool = False) -> Summary:
    """Aggregate a stream of runs."""
    agg = Aggregator()
    for run in runs:
        agg.add(run)
    return agg.summary(root, regraded=regraded)
