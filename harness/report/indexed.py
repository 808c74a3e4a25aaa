"""Runs of a tree read through the results index (`harness.artifacts.index`), not by walking it.

The index is synced first (new, changed and removed runs; rebuilt when missing or of another
layout), runs without a grade are graded (the grader writes their rows), and each row's `RunFacts`
are derived from its run.json and grade.json once, then cached in the row (`facts`, dropped whenever
the row is rewritten), so a report over an unchanged tree parses no record at all.
"""

from __future__ import annotations

import dataclasses
import json
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from harness.artifacts.index import Index, open_index
from harness.artifacts.index_alongside import Alongside, open_alongside
from harness.artifacts.names import GRADE_FILE
from harness.artifacts.records import GRADE_SCHEMA, RUN_SCHEMA, Grade, RunRecord
from harness.artifacts.store import FutureSchemaError
from harness.report.collect import (
    ARTIFACTS,
    CheckFacts,
    RunFacts,
    Unreadable,
    load_grader,
    run_facts,
)
from harness.report.sections import SectionDigest, digest

FACTS_VERSION = "7"
"""Bumped whenever RunFacts or their derivation change: every cached row is derived again."""

COLUMNS = ("dir", "facts", "run_json", "grade_json", "read_error", "family", "split", "files")


def _brief(exc: BaseException) -> str:
    return " ".join(str(exc).split("\n")[:2])[:200]


def _parse(text: str, model: type[RunRecord] | type[Grade], current: int) -> Any:
    record = model.model_validate_json(text)
    if record.schema_version > current:
        raise FutureSchemaError(
            f"schema_version {record.schema_version} is newer than this assay understands ({current})"
        )
    return record


def derive(row: tuple[Any, ...]) -> RunFacts | Unreadable:
    """RunFacts of one index row (dir, facts, run_json, grade_json, read_error, family, split, files)."""
    rel, _facts, run_json, grade_json, read_error, family, split, files = row
    if read_error and read_error.startswith("run.json"):
        return Unreadable(rel, read_error)
    try:
        run = _parse(run_json, RunRecord, RUN_SCHEMA)
    except ValidationError as exc:
        return Unreadable(rel, f"run.json: {_brief(exc)}")
    grade: Grade | None = None
    grade_error: str | None = None
    if read_error:
        grade_error = f"unreadable {read_error}"
    elif grade_json is not None:
        try:
            grade = _parse(grade_json, Grade, GRADE_SCHEMA)
        except ValidationError as exc:
            grade_error = f"unreadable grade.json: {_brief(exc)}"
    names = set(json.loads(files))
    return run_facts(rel, run, grade, grade_error, family, split, tuple(a for a in ARTIFACTS if a in names))


def dump(facts: RunFacts | Unreadable) -> str:
    """The cached form of a row's facts (everything but its dir, which the row has)."""
    if isinstance(facts, Unreadable):
        return json.dumps(["unreadable", facts.reason])
    f = facts
    return json.dumps(
        [
            "run",
            f.version,
            f.scenario,
            f.agent,
            f.condition,
            f.levels,
            f.control,
            f.trial,
            f.family,
            f.split,
            f.status,
            f.passed,
            f.usable,
            f.reason,
            f.exit_code,
            f.infra_retries,
            f.metrics,
            [list(c) for c in f.checks],
            f.failed_layers,
            f.digest if f.digest is not None else digest(f.sections),
            f.artifacts,
            f.sanity,
            f.concurrent,
            f.limits_hit,
            f.unprotected,
            f.usage_differs,
            f.agent_end,
            f.context_advisory,
            f.unsafe_edits,
            f.unpriced,
        ],
        separators=(",", ":"),
    )


def load(rel: str, text: str) -> RunFacts | Unreadable:
    """A row's cached facts back as RunFacts."""
    d = json.loads(text)
    if d[0] == "unreadable":
        return Unreadable(rel, d[1])
    return RunFacts(
        dir=rel,
        version=d[1],
        scenario=d[2],
        agent=d[3],
        condition=d[4],
        levels=tuple((k, v) for k, v in d[5]),
        control=d[6],
        trial=d[7],
        family=d[8],
        split=d[9],
        status=d[10],
        passed=d[11],
        usable=d[12],
        reason=d[13],
        exit_code=d[14],
        infra_retries=d[15],
        metrics=d[16],
        checks=tuple(CheckFacts(c[0], c[1], c[2], c[3], tuple((t, o) for t, o in c[4])) for c in d[17]),
        failed_layers=tuple(d[18]),
        sections={},  # only the aggregates read sections, and they read the digest
        artifacts=tuple(d[20]),
        regrade=None,
        sanity=d[21],
        concurrent=d[22],
        limits_hit=tuple(d[23]),
        unprotected=tuple(d[24]),
        usage_differs=tuple(d[25]),
        agent_end=d[26],
        context_advisory=d[27],
        unsafe_edits=d[28],
        unpriced=d[29],
        digest=SectionDigest(
            tuple(d[19][0]),
            tuple(d[19][1]),
            tuple((name, tuple((p, v) for p, v in leaves)) for name, leaves in d[19][2]),
            tuple((e, v) for e, v in d[19][3]),
        ),
    )


def _listed(index: Index) -> list[tuple[str, bool]]:
    """Every run under the index's root in path order, and whether its folder held a readable grade.json
    (a damaged one is graded again, as a missing one is graded).

    From the small table of folder listings, not the records (most of the index's size, all read cold):
    a row's grade_json is None when grade.json was not in its folder (or vanished as it was read, which
    changed the folder's mtime: the next sync reads it again)."""
    listed = json.dumps(GRADE_FILE)
    return [
        (rel, listed in files and not (error or "").startswith(GRADE_FILE))
        for rel, files, error in index.rows("tree", ("files", "read_error"))
    ]


def finished(listing: Listing) -> set[str]:
    """The runs of listing that are finished as planned vs done counts them: run.json and grade.json
    read, and the run not interrupted (`harness.report.completeness`)."""
    index = listing.index
    where, params = index.where("t.dir")
    cut = len(index.prefix)
    listed = json.dumps(GRADE_FILE)
    found = index.con.execute(
        "SELECT t.dir, t.files, t.read_error, r.run_interrupted FROM tree t JOIN runs r ON r.dir = t.dir"
        + where,
        params,
    )
    return {
        d[cut:] for d, files, error, interrupted in found if listed in files and not error and not interrupted
    }


def _grade(index: Index, todo: list[str], project: Path | None) -> dict[str, str]:
    """Grade the runs named (the grader records them); dir -> why grading failed."""
    grader = load_grader()
    if grader is None or not todo:
        return {}
    failed: dict[str, str] = {}
    for rel in todo:
        run_dir = index.root / rel if rel else index.root
        try:
            grader(run_dir, project=project, regrade=False)
        except FutureSchemaError:
            raise
        except Exception as exc:  # per-run boundary: a run the grader cannot handle is data, not the end
            failed[rel] = f"grader error: {type(exc).__name__}: {_brief(exc)}"
    index.sync()  # rows of runs graded where no index served them (a fresh tree)
    return failed


def _blobs(index: Index, dirs: list[str]) -> dict[str, bytes]:
    """The cached facts of the runs named that have them."""
    cut = len(index.prefix)
    found = index.con.execute(
        f"SELECT dir, facts FROM facts WHERE dir IN ({', '.join('?' for _ in dirs)})",
        [index.prefix + d for d in dirs],
    )
    return {d[cut:]: blob for d, blob in found}


@dataclasses.dataclass(frozen=True)
class Listing:
    """An open index ready to be read for a report: its runs in path order and the runs whose grading
    failed just now (dir -> why). Synced before it was listed, or being synced alongside (`current`)."""

    index: Index
    generation: str | None
    """The index's write count when the runs were listed (`Index.put_aggregate`)."""
    runs: list[str]
    """Each run's dir relative to root."""
    failed: dict[str, str]
    alongside: Alongside | None = None

    def current(self) -> bool:
        """Whether what was read through this listing describes the tree: the check alongside (waited
        for) found every run folder as its row says, and no row was written since the runs were listed.
        Always true of a listing synced first."""
        if self.alongside is None:
            return True
        return (
            self.alongside.wait() == 0
            and self.generation is not None
            and self.index.generation() == self.generation
        )

    def stale(self) -> bool:
        """Already known not to be `current` (the check alongside is over and found a change); False
        while the check still runs."""
        return self.alongside is not None and self.alongside.finished() and not self.current()


@contextmanager
def opened(
    root: Path, *, project: Path | None = None, alongside: bool = False, check: Alongside | None = None
) -> Iterator[Listing]:
    """The index serving root, synced first (or, with alongside, while it is read: see
    `Listing.current`; check: one started already, `start_check`), its runs graded where they lack a
    grade, listed in path order."""
    if alongside:
        index, behind, _synced = open_alongside(root, check)
    else:
        if check is not None:
            check.stop()
        index, behind = open_index(root)[0], None
    try:
        with index:
            if index.meta("facts_version") != FACTS_VERSION:
                index.con.execute("BEGIN IMMEDIATE")
                index.drop_facts()
                index.set_meta("facts_version", FACTS_VERSION)
                index.con.execute("COMMIT")
            generation = index.generation()
            runs = _listed(index)
            todo = [rel for rel, graded in runs if not graded]
            failed: dict[str, str] = {}
            grading = bool(todo) and load_grader() is not None
            if grading and behind is None:
                failed = _grade(index, todo, project)
                generation = index.generation()
                runs = _listed(index)
            if not grading or behind is None:
                yield Listing(index, generation, [rel for rel, _graded in runs], failed, behind)
                return
            # else grade what the tree holds, not what the index saw: synced first, below
    finally:
        if behind is not None:
            behind.stop()
    with opened(root, project=project) as listing:
        yield listing


def facts(listing: Listing, runs: list[str]) -> Iterator[RunFacts | Unreadable]:
    """The facts of some of listing's runs, in their order: cached ones unpacked, the others derived
    from their records (CHUNK at a time) and cached."""
    index, failed = listing.index, listing.failed
    for start in range(0, len(runs), CHUNK):
        chunk = runs[start : start + CHUNK]
        blobs = _blobs(index, chunk)
        derived = _derive_missing(index, [rel for rel in chunk if rel not in blobs or rel in failed])
        index.put_facts(
            [(rel, pack(f)) for rel, f in derived.items() if rel not in failed], listing.generation
        )
        for rel in chunk:
            if rel in failed:
                fact = derived[rel]
                yield (
                    run_facts_with(fact, status="ungradeable", reason=failed[rel])
                    if isinstance(fact, RunFacts)
                    else fact
                )
            elif rel in derived:
                yield derived[rel]
            else:
                yield unpack(rel, blobs[rel])


CHUNK = 2000
"""Runs derived (and their facts cached) at a time: memory stays flat on a first report of a big tree."""


def _derive_missing(index: Index, dirs: list[str]) -> dict[str, RunFacts | Unreadable]:
    """The facts of the runs named (dirs relative to the index's root), from their records."""
    if not dirs:
        return {}
    marks = ", ".join("?" for _ in dirs)
    full = [index.prefix + d for d in dirs]
    cut = len(index.prefix)
    extra = {
        d[cut:]: rest
        for d, *rest in index.con.execute(
            f"SELECT dir, family, split, files, read_error FROM tree WHERE dir IN ({marks})", full
        )
    }
    out: dict[str, RunFacts | Unreadable] = {}
    for d, run_json, grade_json in index.con.execute(
        f"SELECT dir, run_json, grade_json FROM records WHERE dir IN ({marks})", full
    ):
        rel = d[cut:]
        family, split, files, read_error = extra[rel]
        out[rel] = derive((rel, None, run_json, grade_json, read_error, family, split, files))
    return out


def pack(facts: RunFacts | Unreadable) -> bytes:
    """The cached form of a run's facts: compressed JSON (a third of the size, so a third to read cold)."""
    return zlib.compress(dump(facts).encode(), 1)


def unpack(rel: str, blob: bytes) -> RunFacts | Unreadable:
    """A run's cached facts back as RunFacts."""
    return load(rel, zlib.decompress(blob).decode())


def run_facts_with(facts: RunFacts, **changes: Any) -> RunFacts:
    """A copy of facts with some fields replaced."""
    return dataclasses.replace(facts, **changes)
