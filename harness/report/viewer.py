"""The run viewer: one self-contained page per run (`view.html` in its run directory).

What the agent did and how it was judged, in the order a reader asks: the verdict and its reasons,
the prompt, the transcript turn by turn (tool calls with their results), the traced tool use,
each snapshot of the entry with its validity, the diff, every check with its output, usage and
cost per turn, limits and canaries, the logs. Everything shown except the harness's own words is
agent-written and therefore untrusted: the template escapes every value (autoescape, no `|safe`
on data) and the page's Content-Security-Policy lets only its own inline script run, by hash.
Every artifact is read tolerantly; a missing one is said, never fatal.
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
from pathlib import Path
from typing import Any

from harness.artifacts import index, names, readers
from harness.artifacts.records import RunRecord
from harness.artifacts.store import write_atomic
from harness.report.render_md import template
from harness.report.view_model import (
    Block,
    diff_lines,
    gather_snapshots,
    gather_trace,
    gather_turns,
    read_model,
    read_text,
    sessions,
)

SCRIPT = """
(function () {
  var tabs = document.querySelectorAll('nav.tabs a');
  function show(id) {
    var found = false;
    document.querySelectorAll('section.tab').forEach(function (s) {
      var on = s.id === id; s.hidden = !on; found = found || on;
    });
    if (!found) { return show('overview'); }
    tabs.forEach(function (a) { a.classList.toggle('on', a.getAttribute('href') === '#' + id); });
  }
  tabs.forEach(function (a) {
    a.addEventListener('click', function (e) {
      e.preventDefault(); history.replaceState(null, '', a.getAttribute('href'));
      show(a.getAttribute('href').slice(1));
    });
  });
  document.querySelectorAll('button.expand').forEach(function (b) {
    b.addEventListener('click', function () {
      var open = b.getAttribute('aria-expanded') !== 'true';
      document.querySelectorAll(b.dataset.target + ' details').forEach(function (d) { d.open = open; });
      b.setAttribute('aria-expanded', open ? 'true' : 'false');
      b.textContent = open ? 'collapse all' : 'expand all';
    });
  });
  show((location.hash || '#overview').slice(1));
})();
"""
"""The page's only script: tabs and expand-all. It reads no run data: everything it shows is HTML."""

SCRIPT_HASH = "sha256-" + base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode()
CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
    f"script-src '{SCRIPT_HASH}'; base-uri 'none'; form-action 'none'"
)


def _relative(t: float | None, start: float) -> str:
    if t is None or not start:
        return ""
    return f"+{max(0.0, t - start):.1f}s"


def _grade(run_dir: Path) -> tuple[Any, str | None]:
    from harness.artifacts.records import GRADE_SCHEMA, Grade

    return read_model(run_dir / names.GRADE_FILE, Grade, GRADE_SCHEMA)


def _job(run_dir: Path) -> tuple[Any, str | None]:
    from compiler.contract import SCHEMA_VERSION, Job

    return read_model(run_dir / names.JOB_FILE, Job, SCHEMA_VERSION)


def page_context(run_dir: Path) -> dict[str, Any]:
    """Everything the page shows, read from the run directory alone."""
    run, run_error = read_model(run_dir / names.RUN_FILE, RunRecord, 10**6)
    grade, grade_error = _grade(run_dir)
    job, job_error = _job(run_dir)
    start = run.started_at if run else 0.0
    folders = sessions(run_dir)
    prompts: list[tuple[str, str]] = []
    if job is not None:
        steps = job.scenario.steps
        prompts = [(s.name, s.prompt) for s in steps] if steps else [("prompt", job.scenario.prompt)]
    turns, events = gather_turns(folders, start)
    usage_rows: list[dict[str, Any]] = []
    for n, folder in enumerate(folders):
        these, _bad = readers.read_usage(folder / names.USAGE_FILE)
        usage_rows += [{"session": n + 1, "at": _relative(u.t, start), **u.__dict__} for u in these]
    verdicts = {v.index: v for v in grade.snapshots.verdicts} if grade else {}
    diffs = [
        (name, read_text(folder / names.DIFF_FILE))
        for name, folder in zip(_session_names(folders, run_dir), folders, strict=True)
    ]
    return {
        "dir": run_dir.name,
        "run": run,
        "run_error": run_error,
        "grade": grade,
        "grade_error": grade_error,
        "job": job,
        "job_error": job_error,
        "verdict": _verdict(run, grade),
        "prompts": prompts,
        "turns": turns,
        "events": events,
        "trace": gather_trace(run_dir / names.TRACE_FILE, start),
        "snapshots": gather_snapshots(run_dir / names.SNAPSHOTS_DIR, verdicts, start),
        "diffs": [(name, block) for name, block in diffs if block.present],
        "usage_rows": usage_rows,
        "context": readers.read_context(run_dir / names.CONTEXT_FILE),
        "agent_log": read_text(run_dir / names.AGENT_LOG, tail=True),
        "setup_log": read_text(run_dir / names.SETUP_LOG, tail=True),
        "files": sorted(
            p.name + ("/" if p.is_dir() else "")
            for p in run_dir.iterdir()
            if not p.name.startswith(".") and p.name != names.VIEW_FILE
        ),
        "duration": (run.ended_at - run.started_at) if run else None,
        "written_at": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
        "csp": CSP,
        "script": SCRIPT,
        "json": _pretty,
        "diff_lines": diff_lines,
    }


def _session_names(folders: list[Path], run_dir: Path) -> list[str]:
    return [f.name if f != run_dir else ("last session" if len(folders) > 1 else "") for f in folders]


def _pretty(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, indent=2, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return repr(value)


def _verdict(run: RunRecord | None, grade: Any) -> tuple[str, str]:
    """(css class, words) of the run's outcome."""
    if run is None:
        return "bad", "unreadable run.json"
    if run.invalid or (grade is not None and grade.invalid):
        return "warn", "invalid (excluded from rates)"
    if grade is None:
        return "warn", "failed to run" if run.error or run.interrupted else "not graded"
    if grade.status != "graded":
        return "warn", str(grade.status.value).replace("_", " ")
    end = grade.agent_end or run.agent_end
    ended = f"; {end.detail}" + (f" (step {end.step})" if end.step else "") if end is not None else ""
    if grade.passed:
        return "ok", "passed" + ("" if grade.usable else " (not usable: lint errors)") + ended
    return "bad", "failed" + ended


def render_page(run_dir: Path) -> str:
    """The page of one run, as HTML text."""
    return template("view.html.j2", html=True).render(page_context(run_dir))


def write_page(run_dir: Path) -> Path:
    """Write `view.html` into the run directory (atomically) and the run folder's new listing into its
    indexes (the whole row where the records changed since it was written)."""
    path = run_dir / names.VIEW_FILE
    write_atomic(path, render_page(run_dir), durable=False)  # derived: rewritten from the records
    index.record_listing(run_dir)
    return path


def refresh_page(run_dir: Path, *, force: bool = False) -> bool:
    """Write the run's page when it is missing or older than its run.json or grade.json; True if written."""
    page = run_dir / names.VIEW_FILE
    if not force and page.is_file():
        seen = page.stat().st_mtime_ns
        records = [run_dir / names.RUN_FILE, run_dir / names.GRADE_FILE]
        if all(not p.exists() or p.stat().st_mtime_ns <= seen for p in records):
            return False
    write_page(run_dir)
    return True


__all__ = ["Block", "page_context", "refresh_page", "render_page", "write_page"]
