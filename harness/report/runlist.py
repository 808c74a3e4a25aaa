"""The runs as the outputs list them: summary.json's `runs`, junit.xml's test cases, report.html's links.

summary.json and junit.xml list every run and report.html links the first RUN_LINKS_CAP of each cell;
over 100,000 runs building a model per run and rendering it was most of a report's time. A `RunList`
renders its runs a chunk at a time (`seal`: one block of runs, `report.cached`) into the text each output
needs — summary.json's items exactly as pydantic prints them inside the summary, each suite's JUnit test
cases — and keeps the text (compressed) and each cell's first links, so a block's runs are rendered once,
when the block is aggregated, and cached with its aggregate. Chunks are sealed in path order, so joining
them lists the runs in path order as one sorted list would; a list never sealed (a walk of the tree) is
sorted and rendered whole.

`Report` pairs a summary whose `runs` is left empty with the RunList that writes them; `full()` is the
summary with every `RunEntry` (the Python API, tests).
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from markupsafe import Markup, escape
from pydantic import TypeAdapter

from harness.artifacts.names import VIEW_FILE
from harness.artifacts.store import write_atomic
from harness.report.junit import Suite, case, pieces, suite_name
from harness.report.summary import RunEntry, Summary

RUN_LINKS_CAP = 25
"""Runs linked per cell in the page; summary.json and junit.xml list every run."""

RunRow = tuple[Any, ...]
"""A run as RunEntry's fields in order: tuples pickle, cache and sort far faster than models."""
CellKey = tuple[str | None, str, str, str]
"""(version, scenario, agent, condition)."""
LinkRow = tuple[str, int, str, bool, tuple[str, ...]]
"""(dir, trial, status, passed, artifacts): what a run's links in the page show."""

_FIELDS = tuple(RunEntry.model_fields)
_ENTRIES = TypeAdapter(list[RunEntry])
_RUNS_KEY = '\n "runs": [],\n'
"""How `runs` prints, empty, in summary.json (pydantic, indent 1): its items are spliced in there."""


def _pack(text: str) -> bytes:
    return zlib.compress(text.encode(), 1)


def _unpack(blob: bytes) -> str:
    return zlib.decompress(blob).decode()


class RunList:
    """Runs in path order, rendered for the outputs a chunk at a time (see the module docstring)."""

    __slots__ = ("counts", "json", "junit", "links", "rows")

    def __init__(self) -> None:
        self.rows: list[RunRow] = []
        """Runs added and not yet rendered."""
        self.json: list[bytes] = []
        """Rendered chunks of summary.json's items (compressed), in path order."""
        self.junit: dict[str, list[Any]] = {}
        """suite -> [chunks of test cases (compressed), tests, failures, errors, skipped, durations]."""
        self.links: dict[CellKey, list[LinkRow]] = {}
        """cell -> its first RUN_LINKS_CAP runs in path order."""
        self.counts: dict[CellKey, int] = {}
        """cell -> its runs."""

    def add(self, row: RunRow) -> None:
        self.rows.append(row)

    def seal(self) -> None:
        """Render the runs added since the last seal, sorted by path, as the next chunk."""
        if not self.rows:
            return
        rows = sorted(self.rows, key=lambda r: r[0])
        self.rows = []
        entries = [
            RunEntry.model_construct(**{**dict(zip(_FIELDS, row, strict=True)), "artifacts": list(row[-1])})
            for row in rows
        ]
        text = _ENTRIES.dump_json(entries, indent=1).decode()
        self.json.append(_pack(" " + text[2:-2].replace("\n", "\n ")))  # items at summary.json's depth
        cases: dict[str, list[str]] = {}
        for run in entries:
            name = suite_name(run)
            body, outcome = case(name, run)
            cases.setdefault(name, []).append(body)
            suite = self.junit.setdefault(name, [[], 0, 0, 0, 0, []])
            suite[1] += 1
            if outcome:
                suite[2 + ("failures", "errors", "skipped").index(outcome)] += 1
            suite[5].append(run.duration_s or 0.0)
            cell = (run.version, run.scenario, run.agent, run.condition)
            self.counts[cell] = self.counts.get(cell, 0) + 1
            links = self.links.setdefault(cell, [])
            if len(links) < RUN_LINKS_CAP:
                links.append((run.dir, run.trial, run.status, run.passed, tuple(run.artifacts)))
        for name, texts in cases.items():
            self.junit[name][0].append(_pack("\n".join(texts)))

    def merge(self, other: RunList) -> None:
        """Append other's runs: its chunks after this list's (other holds the later paths)."""
        self.rows.extend(other.rows)
        self.json.extend(other.json)
        for name, theirs in other.junit.items():
            mine = self.junit.setdefault(name, [[], 0, 0, 0, 0, []])
            mine[0].extend(theirs[0])
            for i in range(1, 5):
                mine[i] += theirs[i]
            mine[5].extend(theirs[5])
        for cell, n in other.counts.items():
            self.counts[cell] = self.counts.get(cell, 0) + n
        for cell, found in other.links.items():
            links = self.links.setdefault(cell, [])
            links.extend(found[: RUN_LINKS_CAP - len(links)])

    @classmethod
    def of(cls, entries: list[RunEntry]) -> RunList:
        """The list of a summary's runs (a summary.json read back)."""
        runs = cls()
        for e in entries:
            runs.add((*tuple(getattr(e, f) for f in _FIELDS[:-1]), tuple(e.artifacts)))
        runs.seal()
        return runs

    def items_json(self) -> str:
        """summary.json's run items, as they print inside the summary."""
        self.seal()
        return ",\n".join(_unpack(chunk) for chunk in self.json)

    def entries(self) -> list[RunEntry]:
        """Every run as a RunEntry, in path order."""
        items = self.items_json()
        return _ENTRIES.validate_json(f"[{items}]") if items else []

    def junit_xml(self) -> str:
        """junit.xml: one test case per run (`report.junit`)."""
        return "".join(self.junit_pieces())

    def junit_pieces(self) -> Iterator[str]:
        """junit.xml a piece at a time (each block's test cases of a suite are one piece)."""
        self.seal()
        suites: list[Suite] = [
            (name, (s[1], s[2], s[3], s[4]), math.fsum(s[5]), map(_unpack, s[0]))
            for name, s in sorted(self.junit.items())
        ]
        return pieces(suites)

    def links_html(self, base: str) -> dict[CellKey, Markup]:
        """cell -> the page's links to its first runs (each run's page and artifacts), relative to base."""
        self.seal()
        prefix = "" if base in ("", ".") else base.rstrip("/") + "/"
        out: dict[CellKey, Markup] = {}
        for cell, links in self.links.items():
            html = []
            for rel, trial, status, passed, artifacts in links:
                page = VIEW_FILE if VIEW_FILE in artifacts else None  # the run's own page, when written
                mark = f" {'pass' if passed else 'fail'}" if status == "graded" else ""
                files = "".join(
                    f' <a href="{escape(href(prefix, rel, a))}">{escape(a)}</a>'
                    for a in artifacts
                    if a != VIEW_FILE
                )
                html.append(
                    f'<div><a href="{escape(href(prefix, rel, page))}">t{trial}</a> {escape(status)}{mark}{files}</div>'
                )
            out[cell] = Markup("".join(html))
        return out


def href(prefix: str, rel: str, artifact: str | None) -> str:
    """A link to a run folder (or a file in it) from the page: prefix is '' or the root's path + '/'."""
    parts = [p for p in (rel.strip("/"), artifact) if p]
    return prefix + "/".join(parts) if parts else prefix.rstrip("/")


@dataclass(frozen=True)
class Report:
    """A summary whose `runs` is left empty, and the runs it lists (written by `RunList`)."""

    summary: Summary
    runs: RunList

    @classmethod
    def of(cls, summary: Summary) -> Report:
        """A summary with its runs (a summary.json read back) split into the two."""
        return cls(summary.model_copy(update={"runs": []}), RunList.of(summary.runs))

    def full(self) -> Summary:
        """The summary with every run."""
        return self.summary.model_copy(update={"runs": self.runs.entries()})

    def json_text(self) -> str:
        """summary.json's text: byte for byte `full().model_dump_json(indent=1)`, without the models."""
        return "".join(self.json_pieces())

    def json_pieces(self) -> Iterator[str]:
        """json_text a piece at a time (each block's runs are one piece), never joined in memory."""
        text = self.summary.model_dump_json(indent=1)
        self.runs.seal()
        if not self.runs.json:
            yield text
            return
        head, found, tail = text.partition(_RUNS_KEY)
        assert found, "summary.json lost its runs key"
        yield f'{head}\n "runs": [\n'
        for i, chunk in enumerate(self.runs.json):
            if i:
                yield ",\n"
            yield _unpack(chunk)
        yield f"\n ],\n{tail}"

    def write_json(self, path: Path) -> None:
        """Write summary.json atomically."""
        write_atomic(path, self.json_text() + "\n")
