"""The report: stream a run tree into summary.json, report.md, report.html and JUnit XML.

Pipeline: `build` (through the results index, `indexed` and `cached`, or a regrade's walk, `collect`)
→ `aggregate` (accumulate, then one `Summary`) → renderers.
Statistical methods are documented in `harness.report.stats`.
"""

from __future__ import annotations

from harness.report.aggregate import summarize
from harness.report.build import build_summary
from harness.report.summary import SUMMARY_SCHEMA, Summary, read_summary, write_summary

__all__ = ["SUMMARY_SCHEMA", "Summary", "build_summary", "read_summary", "summarize", "write_summary"]
