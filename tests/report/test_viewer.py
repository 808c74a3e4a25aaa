"""The run viewer on runs the real runner and grader left: every part of a run is on its page, what
the agent wrote is text (never markup), a damaged run still gets a page, and the report links it."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from markupsafe import escape

pytest.importorskip("harness.grade", reason="the grader (harness.grade) is not installed")

from harness.report.viewer import CSP, render_page
from tests.helpers import BARE_ENV, assay
from tests.report.viewer_project import BIN_RUN, CONTROL_RUN, make


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make(tmp_path_factory.mktemp("viewer"))


def test_the_matrix_writes_a_page_per_run(project: Path) -> None:
    assert len(list(project.glob("runs/**/trial-*/view.html"))) == 4


def test_the_page_shows_every_part_of_the_run(project: Path) -> None:
    html = (project / BIN_RUN / "view.html").read_text()
    assert "Make handler add one to its argument." in html  # prompt
    assert html.count('<div class="ev" id="event-') == 7  # every transcript event, turn by turn
    assert "hello --fail\ngreet: no such option" in html  # a tool call's result under the call
    assert "<td><pre>greet --fail</pre></td>" in html  # the traced invocation
    # Each snapshot the run holds (how many the watcher caught depends on the machine), with its verdict.
    verdicts = json.loads((project / BIN_RUN / "grade.json").read_text())["snapshots"]["verdicts"]
    assert verdicts and html.count("<h3>#") == len(verdicts)
    for v in verdicts:
        word = "valid" if v["valid"] else "invalid"
        assert f"<h3>#{v['index']} <code>app/main.py</code> +" in html
        assert f'class="badge {word}">{word}' in html
    assert '<pre class="add">+    return x + 1</pre>' in html  # the diff, coloured
    for check in ("compiles", "hidden-tests", "keeps-api"):
        assert f"</span> {check} <span" in html
    assert "Canaries" in html and "timeout_s" in html  # limits and canaries
    assert "$0.0" in html and "tokens" in html  # usage and cost


def test_agent_written_markup_is_shown_as_text(project: Path) -> None:
    html = (project / BIN_RUN / "view.html").read_text()
    assert html.count("<script") == 1  # the page's own, allowed by hash in its CSP
    assert (
        f'content="{escape(CSP)}"' in html
        and "script-src 'sha256-" in CSP
        and "unsafe-inline" not in CSP.split("script-src")[1]
    )
    assert "<img" not in html and "</pre><script>" not in html
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;&lt;img src=x onerror=" in html


def test_a_damaged_run_still_gets_a_page(project: Path, tmp_path: Path) -> None:
    run = tmp_path / "trial-01"
    shutil.copytree(project / BIN_RUN, run, symlinks=True)
    for name in ("job.json", "grade.json", "trace.jsonl", "view.html"):
        (run / name).unlink()
    shutil.rmtree(run / "snapshots")
    (run / "usage.jsonl").write_text('{"t": "soon", "input": -5}\nnot json\n')
    (run / "transcript.jsonl").write_text('[1, 2]\n{"type": 7, "text": {"nested": "<b>x</b>"}}\n')
    (run / "agent.log").unlink()
    (run / "agent.log").symlink_to("/etc/passwd")  # never followed
    html = render_page(run)
    assert "job.json is missing" in html and "grade.json is missing" in html
    assert "1 line(s) of transcript.jsonl were not JSON objects" in html
    assert "&lt;b&gt;x&lt;/b&gt;" in html
    assert "a symlink: not followed" in html and "root:" not in html


def test_the_report_and_summary_link_each_page(project: Path) -> None:
    done = assay("--project", project, "report", "runs", "--out", "out", cwd=project, env=BARE_ENV)
    assert done.returncode == 0, done.stderr
    summary = json.loads((project / "out" / "summary.json").read_text())
    assert all("view.html" in r["artifacts"] for r in summary["runs"])
    html = (project / "out" / "report.html").read_text()
    assert f'href="../{CONTROL_RUN}/view.html"' in html


def test_assay_view_writes_only_missing_or_stale_pages(project: Path) -> None:
    done = assay("--project", project, "view", "runs", cwd=project, env=BARE_ENV)
    assert done.returncode == 0, done.stderr
    assert "4 run(s): 0 page(s) written, 4 up to date" in done.stderr
    page = project / CONTROL_RUN / "view.html"
    page.unlink()
    stale = project / BIN_RUN / "grade.json"
    os.utime(
        stale, ns=(stale.stat().st_atime_ns, (project / BIN_RUN / "view.html").stat().st_mtime_ns + 10**9)
    )
    done = assay("--project", project, "view", "runs", cwd=project, env=BARE_ENV)
    assert "4 run(s): 2 page(s) written, 2 up to date" in done.stderr and page.is_file()
    nothing = assay("--project", project, "view", str(project / "nowhere"), cwd=project, env=BARE_ENV)
    assert nothing.returncode == 2 and "does not exist" in nothing.stderr
