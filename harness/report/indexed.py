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

from harness.artifacts.index import Index, SyncStats, open_index
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

FACTS_VERSION = "5"
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
        digest=SectionDigest(
            tuple(d[19][0]),
            tuple(d[19][1]),
            tuple((name, tuple((p, v) for p, v in leaves)) for name, leaves in d[19][2]),
            tuple((e, v) for e, v in d[19][3]),
        ),
    )


def _grade_missing(index: Index, project: Path | None) -> dict[str, str]:
    """Grade the runs without a grade.json (the grader records them); dir -> why grading failed."""
    grader = load_grader()
    if grader is None:
        return {}
    failed: dict[str, str] = {}
    # From the small table of folder listings, not the records (most of the index's size, all read cold):
    # a row's grade_json is None when grade.json was not in its folder (or vanished as it was read, which
    # changed the folder's mtime: the next sync reads it again).
    listed = json.dumps(GRADE_FILE)
    todo = [rel for rel, files in index.rows("tree", ("files",)) if listed not in files]
    for rel in todo:
        run_dir = index.root / rel if rel else index.root
        try:
            grader(run_dir, project=project, regrade=False)
        except FutureSchemaError:
            raise
        except Exception as exc:  # per-run boundary: a run the grader cannot handle is data, not the end
            failed[rel] = f"grader error: {type(exc).__name__}: {_brief(exc)}"
    if todo:
        index.sync()  # rows of runs graded where no index served them (a fresh tree)
    return failed


def _dirs(index: Index) -> list[str]:
    """Every run under the index's root, in path order."""
    return [rel for (rel,) in index.rows("tree", ())]


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
    """An open, synced index ready to be read for a report: its runs in path order and the runs whose
    grading failed just now (dir -> why)."""

    index: Index
    generation: str | None
    """The index's write count when the runs were listed (`Index.put_aggregate`)."""
    runs: list[str]
    """Each run's dir relative to root."""
    failed: dict[str, str]


@contextmanager
def opened(
    root: Path, *, project: Path | None = None, stats: list[SyncStats] | None = None
) -> Iterator[Listing]:
    """The index serving root, synced, its runs graded where they lack a grade, listed in path order."""
    index, synced = open_index(root)
    with index:
        if stats is not None and synced is not None:
            stats.append(synced)
        if index.meta("facts_version") != FACTS_VERSION:
            index.con.execute("BEGIN IMMEDIATE")
            index.drop_facts()
            index.set_meta("facts_version", FACTS_VERSION)
            index.con.execute("COMMIT")
        failed = _grade_missing(index, project)
        generation = index.generation()
        yield Listing(index, generation, _dirs(index), failed)


def facts(listing: Listing, runs: list[str]) -> Iterator[RunFacts | Unreadable]:
    """The facts of some of listing's runs, in their order: cached ones unpacked, the others derived
    from their records (CHUNK at a time) and cached."""
    index, failed = listing.index, listing.failed
    for start in range(0, len(runs), CHUNK):
        chunk = runs[start : start + CHUNK]
        blobs = _blobs(index, chunk)
        derived = _derive_missing(index, [rel for rel in chunk if rel not in blobs or rel in failed])
        index.put_facts([(rel, pack(f)) for rel, f in derived.items() if rel not in failed])
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


def collect_indexed(
    root: Path, *, project: Path | None = None, stats: list[SyncStats] | None = None
) -> Iterator[RunFacts | Unreadable]:
    """Yield one RunFacts (or Unreadable) per run under root, in path order, through the index."""
    with opened(root, project=project, stats=stats) as listing:
        yield from facts(listing, listing.runs)


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
