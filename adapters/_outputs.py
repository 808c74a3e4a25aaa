"""The adapter contract's outputs: reading what a CLI logged and saying it in `adapters.schema`
(transcript events, usage rows, context items), then writing the three files and agent.json.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from adapters._common import AdapterError, Bench
from adapters.schema import AgentInfo, ContextItem, ContextReport, TranscriptEvent, UsageRow

Role = Literal["user", "assistant", "system", "tool"]


def json_lines(lines: Iterable[tuple[float, str]]) -> Iterator[tuple[float, dict[str, Any]]]:
    """The JSON objects among a CLI's stamped stdout lines (anything else is skipped)."""
    for t, line in lines:
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            yield t, obj


def json_records(paths: Iterable[Path]) -> Iterator[dict[str, Any]]:
    """The JSON objects of JSONL files a CLI wrote (missing files and bad lines are skipped)."""
    for path in paths:
        if path.is_file():
            lines = path.read_text(encoding="utf-8").splitlines()
            yield from (obj for _, obj in json_lines((0.0, line) for line in lines))


def iso_time(stamp: str) -> float:
    """Epoch seconds of an ISO-8601 timestamp (`Z` accepted)."""
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def message(t: float | None, role: Role, text: str | None) -> TranscriptEvent:
    """A message from the user or the assistant."""
    return TranscriptEvent(t=t, type="message", role=role, text=text)


def notice(t: float | None, text: str | None, *, error: bool = False) -> TranscriptEvent:
    """A system notice, or an error when `error`."""
    return TranscriptEvent(t=t, type="error" if error else "system", role="system", text=text)


def tool_call(t: float | None, tool: str | None, args: Any, call_id: str | None = None) -> TranscriptEvent:
    """The assistant calling a tool."""
    return TranscriptEvent(t=t, type="tool_call", role="assistant", tool=tool, input=args, call_id=call_id)


def tool_result(
    t: float | None,
    output: str | None,
    *,
    exit_code: int | None = None,
    call_id: str | None = None,
    tool: str | None = None,
) -> TranscriptEvent:
    """What a tool call returned."""
    return TranscriptEvent(
        t=t, type="tool_result", role="tool", tool=tool, output=output, exit_code=exit_code, call_id=call_id
    )


def usage_row(
    t: float,
    *,
    input: int,
    output: int,
    cache_read: int = 0,
    cache_write: int = 0,
    reasoning: int = 0,
    limit: int | None,
    model: str | None,
) -> UsageRow:
    """One model turn's usage; its context is everything the prompt held."""
    return UsageRow(
        t=t,
        input=input,
        output=output,
        cache_read=cache_read,
        cache_write=cache_write,
        reasoning=reasoning,
        context=input + cache_read + cache_write,
        context_limit=limit,
        model=model,
    )


def workspace_instructions(bench: Bench, names: Iterable[str]) -> list[ContextItem]:
    """Instruction files present in the workspace that the agent reads by convention."""
    return [
        ContextItem(kind="instructions", name=n, path=n, source="workspace")
        for n in names
        if (bench.workspace / n).is_file()
    ]


def skill_items(skill_dir: Path | None) -> list[ContextItem]:
    """The treatment's skill dir as one loaded skill (for CLIs given it whole)."""
    return [ContextItem(kind="skill", name=skill_dir.name, path=str(skill_dir))] if skill_dir else []


def mcp_items(names: Iterable[str]) -> list[ContextItem]:
    """The treatment's MCP servers, as handed to the CLI."""
    return [ContextItem(kind="mcp_server", name=n) for n in names]


def install_skills(skill_dir: Path | None, dest: Path) -> list[ContextItem]:
    """Copy a skill dir into `dest/<skill>/`: each subfolder with a SKILL.md is a skill; a folder
    that has SKILL.md itself is one skill; a plain folder of guides becomes one skill named after
    it, with a SKILL.md that points at its files."""
    if skill_dir is None:
        return []
    if not skill_dir.is_dir():
        raise AdapterError(f"BENCH_SKILL_DIR {skill_dir} is not a folder")
    skills = [d for d in sorted(skill_dir.iterdir()) if (d / "SKILL.md").is_file()]
    if (skill_dir / "SKILL.md").is_file() or not skills:
        skills = [skill_dir]
    items = []
    for src in skills:
        target = dest / src.name
        shutil.copytree(src, target, dirs_exist_ok=True)
        if not (target / "SKILL.md").is_file():
            files = sorted(p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file())
            listing = "\n".join(f"- {target / f}" for f in files)
            (target / "SKILL.md").write_text(
                f"---\nname: {src.name}\ndescription: Guide for this project's tools; read it before "
                f"starting.\n---\n\nRead these files:\n{listing}\n",
                encoding="utf-8",
            )
        items.append(ContextItem(kind="skill", name=src.name, path=str(src)))
    return items


def guide_text(skill_dir: Path | None) -> str:
    """All markdown/text of a skill dir concatenated (for agents that take one instruction file)."""
    if skill_dir is None:
        return ""
    parts = []
    for path in sorted(skill_dir.rglob("*")):
        if path.is_file() and path.suffix.lower() in (".md", ".txt", ".rst", ""):
            rel = path.relative_to(skill_dir).as_posix()
            parts.append(f"<!-- {rel} -->\n{path.read_text(encoding='utf-8', errors='replace')}")
    return "\n\n".join(parts)


def _write(path: Path | None, text: str) -> None:
    """Write atomically (temp file, then rename); no path, no file."""
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def _jsonl(rows: Iterable[BaseModel]) -> str:
    return "".join(r.model_dump_json(exclude_none=True) + "\n" for r in rows)


def write_outputs(
    bench: Bench,
    info: AgentInfo,
    usage: list[UsageRow],
    transcript: list[TranscriptEvent],
    loaded: list[ContextItem],
) -> None:
    """Write usage, transcript, context and agent.json."""
    _write(bench.usage, _jsonl(usage))
    _write(bench.transcript, _jsonl(transcript))
    _write(bench.context, ContextReport(loaded=loaded).model_dump_json(indent=2) + "\n")
    _write(bench.run_dir / "agent.json", info.model_dump_json(indent=2) + "\n")
