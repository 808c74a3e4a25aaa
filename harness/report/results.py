"""`harness.results(tree)`: every run of a tree as a pandas DataFrame, from the results index.

One row per run, one column per field of run.json and grade.json (the index's columns: nested
sections as `<section>_<field>`, lists and maps as Python objects), plus `dir` (relative to the
tree), `family`, `split`, `files`, and `check_<id>` / `expectation_<id>` with each check's and
expectation's verdict. pandas is the `results` extra (`pip install 'assay[results]'`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.artifacts.index import open_index
from harness.artifacts.index_rows import JSON_COLUMNS, RECORD_COLUMNS
from harness.errors import UsageError

if TYPE_CHECKING:
    import pandas

TREE_SHOWN = ("family", "split", "files", "read_error")
SHOWN = ("dir", *TREE_SHOWN, *RECORD_COLUMNS)
"""Columns of the DataFrame taken from the index, in order (bookkeeping such as hashes left out)."""


def _pandas() -> Any:
    try:
        import pandas
    except ModuleNotFoundError:
        raise UsageError(
            "`assay results` needs pandas: pip install 'assay[results]' (or pip install pandas)"
        ) from None
    return pandas


def _verdicts(value: Any, prefix: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in value if isinstance(value, list) else ():
        if isinstance(item, dict) and isinstance(item.get("id"), str):
            out[f"{prefix}{item['id']}"] = item.get("outcome")
    return out


def results(tree: Path | str) -> pandas.DataFrame:
    """The runs under tree as a DataFrame (the index synced first: never a stale row)."""
    pd = _pandas()
    root = Path(tree)
    if not root.is_dir():
        raise UsageError(f"{root}: no such run tree")
    index, _stats = open_index(root)
    records: list[dict[str, Any]] = []
    with index:
        tree_rows = {row[0]: row[1:] for row in index.rows("tree", TREE_SHOWN)}
        for row in index.rows("runs", RECORD_COLUMNS):
            record = dict(zip(SHOWN, (row[0], *tree_rows.get(row[0], (None,) * 4), *row[1:]), strict=True))
            for name in (*JSON_COLUMNS, "files"):
                text = record.get(name)
                if isinstance(text, str):
                    record[name] = json.loads(text)
            record.update(_verdicts(record.get("checks"), "check_"))
            record.update(_verdicts(record.get("expectations"), "expectation_"))
            records.append(record)
    frame = pd.DataFrame.from_records(records, columns=_columns(records))
    for name in ("passed", "usable", "control", "run_timed_out", "run_interrupted", "run_concurrent"):
        if name in frame:
            frame[name] = frame[name].astype("boolean")
    return frame


def _columns(records: list[dict[str, Any]]) -> list[str]:
    extra = sorted({k for r in records for k in r if k.startswith(("check_", "expectation_"))})
    return [*SHOWN, *extra]
