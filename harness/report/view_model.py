"""What the run viewer shows, read tolerantly from a run directory and capped to a readable size.

Nothing here trusts what it reads: a symlink is never followed, text is decoded with replacement,
every long text is cut (saying how much was left out and where the whole is), and an unreadable
file becomes a sentence on the page rather than an exception.
"""

from __future__ import annotations

import difflib
import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from harness.artifacts import names, readers
from harness.artifacts.grade_sections import SnapshotVerdict

M = TypeVar("M", bound=BaseModel)

TEXT_CAP = 200_000
"""Characters of one file (diff, log, snapshot) shown; the rest is in the file the page links."""
FIELD_CAP = 20_000
"""Characters of one transcript field (a message, a tool's input or output) shown."""
EVENT_CAP = 3_000
"""Transcript events shown; a longer transcript is cut (said on the page)."""
SERVE_CAP = 500


@dataclass(frozen=True)
class Block:
    """A piece of agent-written text as shown: possibly cut, with how much was left out."""

    text: str = ""
    present: bool = False
    omitted: int = 0
    """Characters (or bytes, for files) not shown."""
    note: str = ""
    """Why there is nothing to show (missing, a symlink, binary...)."""


def cut(text: str, cap: int = FIELD_CAP) -> Block:
    """text as a Block of at most cap characters."""
    if len(text) <= cap:
        return Block(text, True)
    return Block(text[:cap], True, len(text) - cap)


def read_text(path: Path, *, cap: int = TEXT_CAP, tail: bool = False) -> Block:
    """A file's text (its head, or its tail for logs), never following a symlink."""
    if path.is_symlink():
        return Block(note="a symlink: not followed")
    if not path.is_file():
        return Block(note="not written")
    size = path.stat().st_size
    with path.open("rb") as fh:
        if tail and size > cap:
            fh.seek(size - cap)
        data = fh.read(cap)
    if b"\0" in data[:8192]:
        return Block(note=f"binary, {size:,} bytes")
    return Block(data.decode("utf-8", errors="replace"), True, max(0, size - len(data)))


def read_model(path: Path, model: type[M], current: int) -> tuple[M | None, str | None]:
    """A record read with its model, or (None, why not)."""
    if path.is_symlink() or not path.is_file():
        return None, f"{path.name} is missing"
    try:
        record = model.model_validate_json(path.read_bytes())
    except (ValidationError, ValueError, OSError) as exc:
        return None, f"{path.name} is unreadable: {' '.join(str(exc).split())[:300]}"
    if getattr(record, "schema_version", 0) > current:
        return None, f"{path.name} comes from a newer assay"
    return record, None


def sessions(run_dir: Path) -> list[Path]:
    """The folders holding each agent session's files, oldest first (steps/step-NN, then the run's)."""
    return [*sorted((run_dir / names.STEPS_DIR).glob(f"{names.STEP_PREFIX}*")), run_dir]


def _at(t: Any, start: float) -> str:
    if isinstance(t, bool) or not isinstance(t, int | float) or not start:
        return ""
    return f"+{max(0.0, float(t) - start):.1f}s"


def _text(value: Any) -> Block:
    if value is None:
        return Block()
    if isinstance(value, str):
        return cut(value)
    try:
        return cut(json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str))
    except (TypeError, ValueError):
        return cut(repr(value))


@dataclass
class Event:
    """One transcript event as shown."""

    n: int
    kind: str
    role: str
    at: str
    text: Block
    tool: str
    input: Block
    output: Block
    exit_code: str
    call_id: str
    turn: int | None = None
    """The model turn the adapter numbered the event with, when it did."""
    extra: Block = field(default_factory=Block)
    """Keys of the row the page has no place for, as JSON."""
    result: Event | None = None
    """A tool call's result, when the transcript pairs them (call_id)."""


@dataclass
class Turn:
    """Consecutive events of one speaker: the prompt, one model turn (text and tool calls), a notice."""

    n: int
    role: str
    session: int
    events: list[Event] = field(default_factory=list)
    usage: readers.Turn | None = None


KNOWN = frozenset(
    {
        "t",
        "type",
        "role",
        "text",
        "content",
        "tool",
        "name",
        "input",
        "command",
        "path",
        "output",
        "exit_code",
        "exit",
        "call_id",
        "turn",
        "chars",
    }
)
"""Transcript keys the page lays out; any other key of a row is shown as its details."""
CALL_KINDS = {"tool_call": "tool_call", "tool_use": "tool_call", "edit": "tool_call"}
"""Event types shown as a tool call (adapters/schema.py's, and the scripted agent's own)."""


def _event(n: int, row: dict[str, Any], start: float) -> Event:
    raw_kind = str(row.get("type") or ("tool_call" if row.get("input") is not None else "message"))
    kind = CALL_KINDS.get(raw_kind, raw_kind)
    role = row.get("role")
    if not isinstance(role, str) or not role:
        role = {
            "tool_call": "assistant",
            "tool_result": "tool",
            "message": "assistant",
            "prompt": "user",
        }.get(kind, "system")
    exit_code = row.get("exit_code", row.get("exit"))
    text = row.get("text") if row.get("text") is not None else row.get("content")
    if kind == "prompt" and text is None:
        text = f"(the prompt: {row.get('chars', '?')} characters; see the Prompt tab)"
    call_input = next((row[k] for k in ("input", "command", "path") if row.get(k) is not None), None)
    event = Event(
        n=n,
        kind=kind,
        role=role,
        at=_at(row.get("t"), start),
        text=_text(text),
        tool=str(row.get("tool") or row.get("name") or raw_kind),
        input=_text(call_input),
        output=_text(row.get("output")),
        exit_code="" if exit_code is None else str(exit_code),
        call_id=str(row.get("call_id") or ""),
        turn=row.get("turn") if isinstance(row.get("turn"), int) else None,
        extra=_text({k: v for k, v in row.items() if k not in KNOWN} or None),
    )
    if kind == "tool_call" and (event.output.present or event.exit_code):
        # A call that carries its own result (the scripted agent's tool_use): shown as its result.
        event.result = Event(
            n,
            "tool_result",
            "tool",
            event.at,
            Block(),
            event.tool,
            Block(),
            event.output,
            event.exit_code,
            event.call_id,
        )
    return event


def gather_turns(folders: list[Path], start: float) -> tuple[list[Turn], dict[str, int]]:
    """Transcript events grouped into turns (tool results under their calls), and counts."""
    turns: list[Turn] = []
    shown = total = malformed = 0
    for session, folder in enumerate(folders, 1):
        rows, bad = readers.read_jsonl(folder / names.TRANSCRIPT_FILE)
        malformed += bad
        total += len(rows)
        usage, _ = readers.read_usage(folder / names.USAGE_FILE)
        calls: dict[str, Event] = {}
        mine: list[Turn] = []
        for row in rows:
            if shown >= EVENT_CAP:
                break
            shown += 1
            event = _event(shown, row, start)
            if event.kind == "tool_result" and event.call_id in calls and calls[event.call_id].result is None:
                calls[event.call_id].result = event
                continue
            if event.kind == "tool_call" and event.call_id:
                calls[event.call_id] = event
            group = event.role
            numbered = event.turn is not None and mine and mine[-1].events[-1].turn not in (None, event.turn)
            if not mine or mine[-1].role != group or numbered:
                mine.append(Turn(n=0, role=group, session=session))
            mine[-1].events.append(event)
        model_turns = [t for t in mine if t.role == "assistant"]
        numbers = [t.events[0].turn for t in model_turns]
        if numbers and all(isinstance(k, int) and 0 < k <= len(usage) for k in numbers):
            for t, k in zip(model_turns, numbers, strict=True):  # the adapter numbered its turns
                t.usage = usage[k - 1] if k is not None else None
        elif len(model_turns) == len(usage):  # one usage row per model turn: tokens beside each turn
            for t, u in zip(model_turns, usage, strict=True):
                t.usage = u
        turns += mine
    for n, turn in enumerate((t for t in turns if t.role == "assistant"), 1):
        turn.n = n
    return turns, {"shown": shown, "total": total, "malformed": malformed}


def gather_trace(path: Path, start: float) -> dict[str, Any]:
    """The traced invocations and serve-session lines, as rows."""
    trace = readers.read_trace(path)
    calls = [
        {
            "n": c.index + 1,
            "at": _at(c.t, start),
            "argv": cut(shlex.join(c.argv), 2_000),
            "exit": "—" if c.exit is None else str(c.exit),
            "failed": c.exit != 0,
            "duration": c.duration,
            "out_bytes": c.out_bytes,
            "err_bytes": c.err_bytes,
            "stderr": cut(c.stderr, 4_000),
            "session": c.session or "",
        }
        for c in trace.invocations
    ]
    serve = [
        {"at": _at(s.t, start), "session": s.session, "dir": s.direction, "line": cut(s.line, 4_000)}
        for s in trace.serve[:SERVE_CAP]
    ]
    return {
        "present": trace.present,
        "calls": calls,
        "serve": serve,
        "serve_omitted": max(0, len(trace.serve) - SERVE_CAP),
        "malformed": trace.malformed_rows,
    }


def gather_snapshots(
    snap_dir: Path, verdicts: dict[int, SnapshotVerdict], start: float
) -> list[dict[str, Any]]:
    """Each snapshot of the watched files: its content, its change from the file's previous
    snapshot, and the grader's validity verdict."""
    out: list[dict[str, Any]] = []
    previous: dict[str, str] = {}
    for snap in readers.read_snapshots(snap_dir):
        if snap.omitted is not None:
            content = Block(note=f"not kept: {snap.omitted}")
        elif snap.file is None:
            content = Block(note="the write deleted the file")
        else:
            content = read_text(snap.file, cap=TEXT_CAP)
        before = previous.get(snap.path)
        change = ""
        if content.present and before is not None:
            change = "".join(
                difflib.unified_diff(
                    before.splitlines(keepends=True),
                    content.text.splitlines(keepends=True),
                    f"{snap.path} (before)",
                    f"{snap.path} (snapshot {snap.index})",
                )
            )
        if content.present:
            previous[snap.path] = content.text
        out.append(
            {
                "index": snap.index,
                "at": _at(snap.t, start),
                "path": snap.path,
                "content": content,
                "change": cut(change, TEXT_CAP),
                "first": before is None,
                "verdict": verdicts.get(snap.index),
            }
        )
    return out


def diff_lines(text: str) -> list[tuple[str, str]]:
    """(css class, line) of a unified diff, for colouring."""
    out = []
    for line in text.splitlines():
        if line.startswith(("+++", "---", "diff ", "index ")):
            css = "meta"
        elif line.startswith("@@"):
            css = "hunk"
        elif line.startswith("+"):
            css = "add"
        elif line.startswith("-"):
            css = "del"
        else:
            css = ""
        out.append((css, line))
    return out
