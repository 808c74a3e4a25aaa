"""What the results index holds of one run: its columns, taken from the record models, and `read_row`.

Every scalar field of run.json and grade.json is a column (nested sections flattened as
`<section>_<field>`, lists and maps as JSON text); both records are kept verbatim beside them with
each file's size, mtime and hash, and the run folder's ctime and records' stamp, listing, family
and split (table `tree`, what a sync reads to tell a row is current). The SQLite side is `harness.artifacts.index`
(its file: `index_db`).
"""

from __future__ import annotations

import hashlib
import json
import os
import types
import typing
from enum import Enum
from typing import Any, NamedTuple

from pydantic import BaseModel

from harness.artifacts.index_scan import stat_of
from harness.artifacts.names import GRADE_FILE, JOB_FILE, RUN_FILE
from harness.artifacts.records import GRADE_SCHEMA, RUN_SCHEMA, Grade, RunRecord
from harness.artifacts.store import FutureSchemaError, read_file

IDENTITY = ("job_id", "job_hash", "matrix", "scenario", "cell", "agent", "trial", "version", "model")
"""run.json fields kept under their own names; the rest of run.json is `run_<field>`."""


class Column(NamedTuple):
    """One column of the runs table taken from a record: its name and where it sits in the record."""

    name: str
    path: tuple[str, ...]
    json: bool
    """Stored as JSON text (a list or a map), else as the scalar itself."""


def _scalar(annotation: Any) -> bool:
    if annotation in (int, float, str, bool, type(None)):
        return True
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return True
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return True
    if origin in (typing.Union, types.UnionType):
        return all(_scalar(a) for a in typing.get_args(annotation))
    return False


def _columns(model: type[BaseModel], rename: dict[str, str], prefix: str) -> list[Column]:
    out: list[Column] = []
    for name, info in model.model_fields.items():
        column = rename.get(name, f"{prefix}{name}")
        ann = info.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            for sub, sub_info in ann.model_fields.items():
                out.append(Column(f"{column}_{sub}", (name, sub), not _scalar(sub_info.annotation)))
        else:
            out.append(Column(column, (name,), not _scalar(ann)))
    return out


RUN_COLUMNS = _columns(RunRecord, {n: n for n in IDENTITY} | {"levels": "levels"}, "run_")
GRADE_COLUMNS = _columns(Grade, {"schema_version": "grade_schema_version"}, "")
TREE_COLUMNS = ("dir", "dir_ctime_ns", "records_stamp", "files", "family", "split", "read_error")
"""Table `tree`, small and read by every sync: what it takes to tell a row is current (its folder's
`harness.artifacts.index_scan.Stat` when the row was read)."""
RECORD_FILES = ("run_size", "run_mtime_ns", "run_hash", "grade_size", "grade_mtime_ns", "grade_hash")
RECORDS_COLUMNS = ("dir", *RECORD_FILES, "run_json", "grade_json")
"""Table `records`: both records verbatim (compact), each with its file's size, mtime and hash."""
RECORD_COLUMNS = tuple(c.name for c in (*RUN_COLUMNS, *GRADE_COLUMNS))
RUNS_COLUMNS = ("dir", *RECORD_COLUMNS)
"""Table `runs`: one column per field of run.json and grade.json (what `assay results` shows)."""
JSON_COLUMNS = frozenset(c.name for c in (*RUN_COLUMNS, *GRADE_COLUMNS) if c.json)
TABLES = {"tree": TREE_COLUMNS, "records": RECORDS_COLUMNS, "runs": RUNS_COLUMNS}


class Row(NamedTuple):
    """One run's rows of the three tables (`facts`, a reader's cache, is emptied when they change)."""

    dir: str
    tree: tuple[Any, ...]
    records: tuple[Any, ...]
    runs: tuple[Any, ...]


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


class _Raw(NamedTuple):
    """A record file as read."""

    data: bytes | None
    """None: there, but not readable (its reason is in the row's errors)."""
    st: os.stat_result


def _read_bytes(path: str, errors: list[str]) -> _Raw | None:
    """A record's bytes and stat; None when it is gone. One that cannot be read (a folder of its
    name, no permission) has no bytes, its reason appended to errors: a row the report counts."""
    try:
        return _Raw(*read_file(path))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        errors.append(f"{os.path.basename(path)}: {str(exc)[:200]}")
        return _Raw(None, os.lstat(path))


def _pick(data: dict[str, Any], column: Column) -> Any:
    value: Any = data
    for key in column.path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    if value is None:
        return None
    if column.json:
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))  # a writer that broke the type: kept, not lost
    return value


def _load(raw: bytes, name: str, current: int, run_dir: str, errors: list[str]) -> dict[str, Any]:
    """A record's JSON object; {} with the reason appended to errors when it is not one (a record
    from a newer assay raises FutureSchemaError)."""
    try:
        data = json.loads(raw)
    except ValueError as exc:
        errors.append(f"{name}: {str(exc)[:200]}")
        return {}
    if not isinstance(data, dict):
        errors.append(f"{name}: not a JSON object")
        return {}
    version = data.get("schema_version", 0)
    if isinstance(version, int) and version > current:
        raise FutureSchemaError(
            f"{run_dir}/{name}: schema_version {version} is newer than this assay understands ({current}); upgrade assay"
        )
    missing = [key for key in _REQUIRED[name] if key not in data]
    if missing:  # what every such record holds: this one is damaged (its model would refuse it too)
        errors.append(f"{name}: not a complete record (no {', '.join(missing)})")
        return {}
    return data


_REQUIRED = {
    name: tuple(key for key, field in model.model_fields.items() if field.is_required())
    for name, model in ((RUN_FILE, RunRecord), (GRADE_FILE, Grade))
}
"""Per record, the fields its model requires."""


class Scenarios:
    """family and split per scenario, from the first job.json read for it."""

    def __init__(self) -> None:
        self.known: dict[str, tuple[str | None, str | None]] = {}

    def lookup(self, scenario: Any, run_dir: str, files: frozenset[str]) -> tuple[str | None, str | None]:
        key = str(scenario)
        if key in self.known or JOB_FILE not in files:
            return self.known.get(key, (None, None))
        try:
            with open(os.path.join(run_dir, JOB_FILE), "rb") as fh:
                job = json.loads(fh.read())
            spec = job.get("scenario", {}) if isinstance(job, dict) else {}
            family, split = spec.get("family"), spec.get("split")
            found = (family if isinstance(family, str) else None, split if isinstance(split, str) else None)
        except (OSError, ValueError):
            found = (None, None)
        self.known[key] = found
        return found


def read_row(run_dir: str, rel: str, scenarios: Scenarios | None = None) -> Row | None:
    """The index rows of one run folder, read from disk; None when it holds no run.json (any more).

    A run.json or grade.json that cannot be read becomes `read_error` on the row (the report counts
    it), never an exception — except one written by a newer assay (FutureSchemaError).
    """
    # Stat'ed before anything is read: whatever changes meanwhile is read again by the next sync.
    dir_ctime_ns, records_stamp = stat_of(run_dir)
    files = frozenset(os.listdir(run_dir))
    errors: list[str] = []
    run = _read_bytes(os.path.join(run_dir, RUN_FILE), errors) if RUN_FILE in files else None
    if run is None:
        return None
    run_data = _load(run.data, RUN_FILE, RUN_SCHEMA, run_dir, errors) if run.data is not None else {}
    grade = _read_bytes(os.path.join(run_dir, GRADE_FILE), errors) if GRADE_FILE in files else None
    grade_data = (
        _load(grade.data, GRADE_FILE, GRADE_SCHEMA, run_dir, errors)
        if grade is not None and grade.data is not None
        else {}
    )
    family, split = (scenarios or Scenarios()).lookup(run_data.get("scenario"), run_dir, files)
    listing = json.dumps(sorted(n for n in files if not n.startswith(".")))
    return Row(
        dir=rel,
        tree=(rel, dir_ctime_ns, records_stamp, listing, family, split, "; ".join(errors) or None),
        records=(
            rel,
            run.st.st_size,
            run.st.st_mtime_ns,
            _digest(run.data or b""),
            grade.st.st_size if grade else None,
            grade.st.st_mtime_ns if grade else None,
            _digest(grade.data or b"") if grade else None,
            _compact(run_data) if run_data else (run.data or b"").decode("utf-8", errors="replace"),
            None
            if grade is None
            else _compact(grade_data)
            if grade_data
            else (grade.data or b"").decode("utf-8", "replace"),
        ),
        runs=(
            rel,
            *(_pick(run_data, c) for c in RUN_COLUMNS),
            *(_pick(grade_data, c) if grade_data else None for c in GRADE_COLUMNS),
        ),
    )


def _compact(data: dict[str, Any]) -> str:
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)
