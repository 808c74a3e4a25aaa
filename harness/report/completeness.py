"""Planned vs done: which trials of the compiled matrix a run tree holds, and which it lacks.

A report over part of a matrix must say so: the planned trials come from the project's
`generated/` (the same jobs `assay matrix` would run), and each is `done` (run.json, not
interrupted, graded), `unfinished` (its folder exists but it is not) or `not run` (no folder); a trial the matrix's rounds
chose not to run (rounds.json: its comparison was decided, or the budget stopped scheduling) is
`skipped`, planned but not missing.
A comparison whose treatment or control cell lacks trials is flagged: its uplift rests on
incomplete pairs.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path

from compiler import contract
from harness.artifacts.names import RUN_FILE
from harness.artifacts.records import read_grade, read_run
from harness.artifacts.rounds import read_rounds
from harness.artifacts.run_tree import run_dir_for
from harness.report.summary import CellCompleteness, Completeness, Diagnostic, Summary

SHOWN = 8
"""Missing trials named per cell in a diagnostic (summary.json lists every one)."""


def _state(run_dir: Path, root: Path, finished: set[str] | None) -> str:
    if finished is not None and run_dir.is_relative_to(root):
        rel = run_dir.relative_to(root).as_posix()
        return "done" if rel in finished else "unfinished" if run_dir.exists() else "not_run"
    if not run_dir.exists():
        return "not_run"
    try:
        if not (run_dir / RUN_FILE).is_file() or read_run(run_dir).interrupted or read_grade(run_dir) is None:
            return "unfinished"
    except (OSError, ValueError):
        return "unfinished"
    return "done"


def _skipped(root: Path) -> set[str]:
    """Jobs a matrix run in rounds chose not to run (its rounds.json): planned, but not missing."""
    try:
        record = read_rounds(root)
    except (OSError, ValueError):
        return set()
    return {s.job for s in record.skipped} if record is not None else set()


def completeness(
    root: Path, project: Path | None, finished: Callable[[], set[str]] | None = None
) -> Completeness | None:
    """Planned vs done for the matrices whose folders are `root` (runs/<matrix>) or lie under it.

    finished: the finished runs' folders relative to root, from the tree's results index
    (`harness.report.indexed.finished`); without it each planned run's records are read from disk.
    """
    generated = project / "generated" if project is not None else None
    if generated is None or not (generated / contract.MANIFEST_FILE).is_file():
        return None
    try:
        manifest = contract.load_manifest(generated)
    except (OSError, ValueError):
        return None
    names = {e.matrix or k for k, e in manifest.matrices.items()}
    if root.name in names:
        runs_root, wanted = root.parent, {root.name}
    else:
        runs_root, wanted = root, {n for n in names if (root / n).is_dir()}
    if not wanted:
        return None
    cells: dict[tuple[str, str], CellCompleteness] = {}
    missing: dict[tuple[str, str], dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    counts: Counter[tuple[str, str]] = Counter()
    done: Counter[tuple[str, str]] = Counter()
    ended = finished() if finished is not None else None
    for matrix in sorted(wanted):
        skipped = _skipped(runs_root / matrix)
        for job in contract.iter_jobs(generated, matrix=matrix):
            key = (job.matrix, job.cell.name)
            counts[key] += 1
            state = _state(run_dir_for(job, runs_root), root, ended)
            if state == "done":
                done[key] += 1
            else:
                missing[key]["skipped" if job.id in skipped and state == "not_run" else state].append(job.id)
    for key in sorted(counts):
        cells[key] = CellCompleteness(
            matrix=key[0],
            cell=key[1],
            planned=counts[key],
            done=done[key],
            not_run=missing[key]["not_run"],
            unfinished=missing[key]["unfinished"],
            skipped=missing[key]["skipped"],
        )
    return Completeness(planned=sum(counts.values()), done=sum(done.values()), cells=list(cells.values()))


def diagnostics(found: Completeness, summary: Summary) -> list[Diagnostic]:
    """A warning per incomplete cell naming what is missing, and one per uplift resting on it."""
    out: list[Diagnostic] = []
    short = {c.cell: c for c in found.cells if c.not_run or c.unfinished}
    for c in short.values():
        ids = [*c.not_run, *c.unfinished]
        named = ", ".join(ids[:SHOWN]) + (f" and {len(ids) - SHOWN} more" if len(ids) > SHOWN else "")
        out.append(
            Diagnostic(
                kind="incomplete",
                severity="warning",
                message=f"{c.matrix} {c.cell}: {c.done} of {c.planned} planned trials done "
                f"({len(c.not_run)} never ran, {len(c.unfinished)} never finished"
                + (f", {len(c.skipped)} skipped by its rounds" if c.skipped else "")
                + f"): {named}",
                evidence=ids,
            )
        )
    flagged = set()
    for up in summary.uplifts:
        cells = {up.condition, up.control}
        hit = sorted(cell for cell in cells if cell in short)
        if hit and (up.condition, up.control) not in flagged:
            flagged.add((up.condition, up.control))
            out.append(
                Diagnostic(
                    kind="incomplete-pairs",
                    severity="warning",
                    message=f"the uplift of {up.condition} over {up.control} rests on incomplete pairs: "
                    + ", ".join(f"{cell} {short[cell].done}/{short[cell].planned}" for cell in hit),
                )
            )
    return out
