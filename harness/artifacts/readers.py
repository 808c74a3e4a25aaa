"""Tolerant readers of what the agent's side leaves in a run directory (trace, usage, transcript, ...).

The file names are in `harness.artifacts.names`. The
readers normalise rows into frozen dataclasses: a row the grader cannot read is
counted as malformed, never fatal, because one bad line must not throw away a run's
evidence.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.artifacts.names import EVENTS_FILE, SNAPSHOT_INDEX

MAX_TOKENS = 10**9
"""The most tokens one usage row may count in any field; a larger figure is malformed, not a cost."""
SNAPSHOT_MAX = 16 << 20
"""The largest version of a watched file a snapshot keeps (bytes); a larger one is recorded, never
read nor kept (a sparse 1,000 MB entry file rewritten in a loop had put a full copy per version on
the run directory's disk and in memory), and the grader does not rebuild a state holding one."""


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number")  # NaN and Infinity: JSON has neither


def loads(text: str | bytes) -> Any:
    """JSON the agent's side wrote, every failure a ValueError: bad syntax, bytes that are not
    UTF-8, NaN or Infinity, and nesting too deep for the parser (`[[[[...` raises RecursionError,
    which had crashed capture and the grader: a run the agent could take out of every rate)."""
    try:
        return json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise ValueError("nested too deeply to read") from None


def read_jsonl(path: Path) -> tuple[list[dict[str, Any]], int]:
    """Rows of a JSONL file that are JSON objects, and the count of lines that are not."""
    rows: list[dict[str, Any]] = []
    bad = 0
    if path.is_symlink():
        return rows, 1  # the agent could write its run dir: a link is never evidence
    if not path.is_file():
        return rows, bad
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if not line.strip():
            continue
        try:
            value = loads(line)
        except ValueError:  # JSONDecodeError, too deep included
            bad += 1
            continue
        if isinstance(value, dict):
            rows.append(value)
        else:
            bad += 1
    return rows, bad


def _num(row: dict[str, Any], *keys: str) -> float | None:
    for key in keys:
        value = row.get(key)
        if isinstance(value, bool):
            continue
        if isinstance(value, int | float) and math.isfinite(value):
            return float(value)
    return None


class Malformed(ValueError):
    """A row field that is present but not what the contract says."""


def count(value: Any, *, limit: int = MAX_TOKENS) -> int | None:
    """A count field: None when absent, else a non-negative integer up to `limit`.

    An integral float (`12.0`) is accepted; a bool, a fraction, a negative or larger figure
    raises `Malformed`: a forged row must never reach a sum.
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Malformed(f"{value!r} is not a number")
    if isinstance(value, float) and not value.is_integer():
        raise Malformed(f"{value!r} is not a whole number")
    if not 0 <= value <= limit:
        raise Malformed(f"{value!r} is outside 0..{limit}")
    return int(value)


def _time(row: dict[str, Any]) -> float:
    value = row.get("t")
    if value is None:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 1e11:
        raise Malformed(f"t={value!r} is not an epoch time")
    return float(value)


@dataclass(frozen=True)
class Invocation:
    """One traced command invocation (a row of trace.jsonl without `serve`)."""

    index: int
    t: float
    command: str
    argv: tuple[str, ...]
    exit: int | None
    duration: float
    out_bytes: int
    err_bytes: int
    stderr: str = ""
    session: str | None = None

    @property
    def args(self) -> tuple[str, ...]:
        """Arguments after the command name."""
        return self.argv[1:]

    @property
    def subcommand(self) -> str:
        """The first argument that is not an option, or '' when there is none."""
        for arg in self.args:
            if not arg.startswith("-"):
                return arg
        return ""


@dataclass(frozen=True)
class ServeLine:
    """One line of a long-lived serve session, teed into the trace."""

    t: float
    session: str
    direction: str  # "in" (agent -> tool) or "out" (tool -> agent)
    line: str


@dataclass(frozen=True)
class Trace:
    """trace.jsonl read and normalised."""

    invocations: tuple[Invocation, ...] = ()
    serve: tuple[ServeLine, ...] = ()
    malformed_rows: int = 0
    present: bool = False


MAX_BYTES = 1 << 50
"""The most output bytes one traced invocation may report."""


def _invocation(row: dict[str, Any], argv: list[Any], t: float, *, index: int) -> Invocation:
    argv_t = tuple(str(a) for a in argv)
    exit_code = row.get("exit", row.get("exit_code"))
    if exit_code is not None and (isinstance(exit_code, bool) or not isinstance(exit_code, int)):
        raise Malformed(f"exit={exit_code!r} is not an exit status")
    command = str(row.get("tool") or row.get("command") or Path(argv_t[0]).name)
    return Invocation(
        index=index,
        t=t,
        command=command,
        argv=(command, *argv_t[1:]),
        exit=exit_code,
        duration=_num(row, "duration", "duration_s") or 0.0,
        out_bytes=count(row.get("output_bytes", row.get("out_bytes")), limit=MAX_BYTES) or 0,
        err_bytes=count(row.get("err_bytes", row.get("stderr_bytes")), limit=MAX_BYTES) or 0,
        stderr=str(row.get("stderr") or row.get("error") or ""),
        session=None if row.get("session") is None else str(row.get("session")),
    )


def read_trace(path: Path) -> Trace:
    """Read trace.jsonl; an absent file is an empty trace (the agent ran nothing traced)."""
    rows, bad = read_jsonl(path)
    calls: list[Invocation] = []
    serve: list[ServeLine] = []
    for row in rows:
        t = _num(row, "t", "start", "started_at") or 0.0
        if row.get("dir") in ("in", "out") and "argv" not in row:
            serve.append(ServeLine(t, str(row.get("session", "")), str(row["dir"]), str(row.get("line", ""))))
            continue
        argv = row.get("argv")
        if not isinstance(argv, list) or not argv:
            bad += 1
            continue
        try:
            calls.append(_invocation(row, argv, t, index=len(calls)))
        except Malformed:
            bad += 1
    calls.sort(key=lambda c: (c.t, c.index))
    calls = [Invocation(**{**c.__dict__, "index": i}) for i, c in enumerate(calls)]
    serve.sort(key=lambda s: s.t)
    return Trace(tuple(calls), tuple(serve), bad, path.is_file())


@dataclass(frozen=True)
class Snapshot:
    """One snapshot of a watched file, taken after a write."""

    index: int
    t: float
    path: str
    file: Path | None
    """The stored copy; None when the write deleted the file, or when `omitted`."""
    omitted: str | None = None
    """Why a version that was there has no copy (too large to keep), else None."""


def read_snapshots(snap_dir: Path) -> tuple[Snapshot, ...]:
    """Snapshots in time order, from snapshots/index.jsonl (the runner's watcher writes it).

    Index rows: `t`, `index` (1-based), `file` (workspace-relative watched path),
    `snapshot` (stored copy's name inside snapshots/), `deleted` when the write removed it,
    `omitted` (why) for a version recorded without a copy.
    """
    rows, _ = read_jsonl(snap_dir / SNAPSHOT_INDEX)
    found: list[tuple[float, int, Snapshot]] = []
    for n, row in enumerate(rows):
        stored = row.get("snapshot")
        copy = snap_dir / str(stored) if stored and not row.get("deleted") else None
        if copy is not None and (copy.is_symlink() or snap_dir.resolve() not in copy.resolve().parents):
            copy = None  # a snapshot copy that points elsewhere is not the agent's file
        found.append(
            (
                _num(row, "t") or 0.0,
                int(_num(row, "index") or n),
                Snapshot(0, 0.0, str(row.get("file", "")), copy, _omitted(row, copy)),
            )
        )
    found.sort(key=lambda item: (item[0], item[1]))
    return tuple(Snapshot(i, t, s.path, s.file, s.omitted) for i, (t, _, s) in enumerate(found))


def _omitted(row: dict[str, Any], copy: Path | None) -> str | None:
    """Why the runner kept no copy of a version that was there (a copy that points elsewhere is
    read as a deletion, as before: never followed)."""
    if copy is not None or row.get("deleted") or not row.get("omitted"):
        return None
    return str(row["omitted"])


TOKEN_KINDS = ("input", "output", "cache_read", "cache_write", "reasoning")
"""Token fields of a usage row (seed 000), each a count."""


@dataclass(frozen=True)
class Turn:
    """One model turn of usage.jsonl (seed 000's row)."""

    t: float
    input: int
    output: int
    cache_read: int
    cache_write: int
    reasoning: int
    context: int | None
    context_limit: int | None
    model: str | None = None
    """The model the row says answered (UsageRow.model); priced only when the run names none."""


def usage_turn(row: dict[str, Any]) -> Turn:
    """One usage row as a `Turn`; raises `Malformed` for a field outside the contract."""
    counts = {key: count(row.get(key)) for key in TOKEN_KINDS}
    model = row.get("model")
    return Turn(
        t=_time(row),
        **{key: value or 0 for key, value in counts.items()},
        context=count(row.get("context")),
        context_limit=count(row.get("context_limit")),
        model=model if isinstance(model, str) and 0 < len(model) <= 200 else None,
    )


def read_usage(path: Path) -> tuple[tuple[Turn, ...], int]:
    """Turns of usage.jsonl and the count of unreadable rows (a row with any bad figure is one)."""
    rows, bad = read_jsonl(path)
    turns = []
    for row in rows:
        try:
            turns.append(usage_turn(row))
        except Malformed:
            bad += 1
    return tuple(sorted(turns, key=lambda u: u.t)), bad


@dataclass(frozen=True)
class Context:
    """context.json: what the agent loaded into its context besides the prompt."""

    loaded: tuple[str, ...] = ()
    present: bool = False
    error: str | None = None


CONTEXT_MAX_BYTES = 4 * 1024 * 1024
CONTEXT_ITEMS = 200
CONTEXT_ITEM_CHARS = 500
"""How much of context.json a grade keeps (the agent writes it: unbounded, it bloated grade.json)."""


def read_context(path: Path) -> Context:
    """Read context.json; an unreadable file is reported, not fatal. At most CONTEXT_MAX_BYTES are
    read, and the first CONTEXT_ITEMS items kept (each cut at CONTEXT_ITEM_CHARS); more is said."""
    if path.is_symlink():
        return Context(present=True, error="context.json is a symlink")
    if not path.is_file():
        return Context()
    try:
        with path.open("rb") as fh:
            raw = fh.read(CONTEXT_MAX_BYTES + 1)
    except OSError as exc:
        return Context(present=True, error=f"context.json cannot be read: {exc}")
    if len(raw) > CONTEXT_MAX_BYTES:
        return Context(
            present=True, error=f"context.json is larger than {CONTEXT_MAX_BYTES:,} bytes: not read"
        )
    try:
        data = loads(raw)
    except ValueError as exc:
        return Context(present=True, error=f"context.json is not JSON: {exc}")
    loaded = data.get("loaded") if isinstance(data, dict) else None
    if not isinstance(loaded, list):
        return Context(present=True, error="context.json has no 'loaded' list")
    kept = tuple(str(x)[:CONTEXT_ITEM_CHARS] for x in loaded[:CONTEXT_ITEMS])
    more = len(loaded) - len(kept)
    return Context(
        kept,
        True,
        f"context.json lists {len(loaded):,} items: the first {len(kept)} are kept" if more else None,
    )


@dataclass(frozen=True)
class Transcript:
    """transcript.jsonl rows as written by the adapter; present=False when there is none."""

    rows: tuple[dict[str, Any], ...] = field(default=())
    present: bool = False


def read_transcript(path: Path) -> Transcript:
    """Read transcript.jsonl; an absent or empty file means the adapter gave none."""
    rows, _ = read_jsonl(path)
    return Transcript(tuple(rows), path.is_file() and bool(rows))


def read_events(state_dir: Path, name: str = EVENTS_FILE) -> tuple[dict[str, Any], ...] | None:
    """A treatment's JSONL event log in the state dir, or None when it wrote none."""
    path = state_dir / name
    if not path.is_file():
        return None
    rows, _ = read_jsonl(path)
    return tuple(rows)
