"""A run tree into a `Report`: through its results index, or by walking it when every run is regraded.

Through the index the report is made while the index is synced alongside (`harness.artifacts.
index_alongside`): what the report does with the runs (the cached aggregates, the summary, and the
caller's rendering of it) covers the stat of every run folder. Nothing read meanwhile is trusted
until the sync is done: when it found a run folder changed behind the index (or a grader wrote a row
meanwhile), the first report and its rendering are discarded and both made again from the synced
index, so what a caller gets is always what a full walk of the tree gives.
"""

from __future__ import annotations

import gc
import multiprocessing
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol, TypeVar

from harness.artifacts.index_alongside import Alongside
from harness.report import cached, completeness
from harness.report.aggregate import CACHED, Aggregator, read_manifest_hints
from harness.report.collect import collect
from harness.report.indexed import Listing, finished, opened
from harness.report.runlist import Report
from harness.report.summary import Summary
from harness.report.walk import partition


class Output(Protocol):
    """What a caller made of a report before it is known to describe the tree (files staged beside
    their targets, say): thrown away when the report is made again."""

    def discard(self) -> None: ...


OutputT = TypeVar("OutputT", bound=Output)


class Nothing:
    """No output: the report alone."""

    def discard(self) -> None:
        return None


def _aggregate_part(root: Path, starts: list[str], regrade: bool, project: Path | None) -> Aggregator:
    agg = Aggregator()
    for run in collect(root, regrade=regrade, project=project, starts=starts):
        agg.add(run)
    return agg


def build_summary(
    root: Path, *, regrade: bool = False, project: Path | None = None, jobs: int | None = None
) -> Summary:
    """`build_report`'s summary with every run in it."""
    report = build_report(root, regrade=regrade, project=project, jobs=jobs)
    return report.full()


def build_report(
    root: Path, *, regrade: bool = False, project: Path | None = None, jobs: int | None = None
) -> Report:
    """A run tree (grading what needs it, or everything with regrade) into a Report.

    Without regrade the runs come through the tree's results index (`build_rendered`); a regrade
    walks the tree, grading every run again (which rewrites their index rows).
    jobs (regrade only): worker processes; None picks 1 for small trees and up to the CPU count for large ones.
    Each worker streams its share of the top-level subtrees and returns its counters, which merge
    exactly (pooled moments, capped sorted evidence), so the summary does not depend on jobs.
    """
    if not regrade:
        return build_rendered(root, lambda _report: Nothing(), project=project)[0]
    agg = Aggregator()
    parts = partition(root, jobs)
    if len(parts) <= 1:
        for run in collect(root, regrade=regrade, project=project):
            agg.add(run)
    else:
        ctx = (
            multiprocessing.get_context("fork") if "fork" in multiprocessing.get_all_start_methods() else None
        )
        with ProcessPoolExecutor(max_workers=len(parts), mp_context=ctx) as pool:
            futures = [pool.submit(_aggregate_part, root, part, regrade, project) for part in parts]
            for future in futures:
                agg.merge(future.result())
    return _finish(agg, root, project, regraded=True)


def build_rendered(
    root: Path,
    render: Callable[[Report], OutputT],
    *,
    project: Path | None = None,
    check: Alongside | None = None,
) -> tuple[Report, OutputT]:
    """root's report through its index and render's output of it, both made while the index is checked
    alongside; made again from the index synced first when the tree had changed behind it (the first
    output discarded, or never rendered when the check said so before it). check: the check of root's
    index when the caller started it already (`start_check`)."""
    with _collector_paused(), opened(root, project=project, alongside=True, check=check) as listing:
        report = _through(listing, root, project)
        if not listing.stale():
            output = render(report)
            if listing.current():
                return report, output
            output.discard()
    with _collector_paused(), opened(root, project=project) as listing:
        report = _through(listing, root, project)
        return report, render(report)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cycle collector paused: a report over 100,000 runs makes millions of small objects
    (the cached blocks decoded, the pairs, the rendered rows), none of them in a cycle, and every
    full collection walked them all again (a tenth of the report's CPU)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _through(listing: Listing, root: Path, project: Path | None) -> Report:
    agg = cached.aggregate(listing, Aggregator, CACHED)
    return _finish(agg, root, project, regraded=False, done=lambda: finished(listing))


def _finish(
    agg: Aggregator,
    root: Path,
    project: Path | None,
    *,
    regraded: bool,
    done: Callable[[], set[str]] | None = None,
) -> Report:
    report = agg.report(root, regraded=regraded, hints=read_manifest_hints(project))
    return Report(with_completeness(report.summary, root, project, done), report.runs)


def with_completeness(
    summary: Summary, root: Path, project: Path | None, done: Callable[[], set[str]] | None = None
) -> Summary:
    """The summary with planned vs done (the finished runs from done, else from disk), and a warning
    first for what is missing."""
    found = completeness.completeness(root, project, done)
    if found is None:
        return summary
    return summary.model_copy(
        update={
            "completeness": found,
            "diagnostics": [*completeness.diagnostics(found, summary), *summary.diagnostics],
        }
    )
