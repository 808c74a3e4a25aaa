"""The run viewer in real headless Chromium: no script of the agent's runs, no request leaves the
page, the tabs work, and screenshots of the page land in build/test-artifacts/ for a human to read."""

from __future__ import annotations

from pathlib import Path

import pytest
from cdp import ARTIFACTS, Browser

pytest.importorskip("harness.grade", reason="the grader (harness.grade) is not installed")

from tests.report.viewer_project import BIN_RUN, HOSTILE, make

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make(tmp_path_factory.mktemp("viewer")) / BIN_RUN / "view.html"


def open_tab(browser: Browser, page: Path, tab: str) -> None:
    """Load the page afresh at a tab (through about:blank: a new #fragment alone is no new load)."""
    for url in ("about:blank", f"{page.as_uri()}#{tab}"):
        browser.events.clear()
        browser.call("Page.navigate", url=url)
        browser.wait_event("Page.loadEventFired")


def visible(browser: Browser) -> list[str]:
    return browser.evaluate(
        "Array.from(document.querySelectorAll('section.tab')).filter(s => !s.hidden).map(s => s.id)"
    )


def test_no_agent_script_runs_and_nothing_is_fetched(browser: Browser, page: Path) -> None:
    for tab in ("overview", "transcript", "trace", "snapshots", "diff", "checks", "logs"):
        open_tab(browser, page, tab)
        assert visible(browser) == [tab]
        assert browser.evaluate("typeof window.__pwned") == "undefined"
        assert browser.evaluate("document.querySelectorAll('img, iframe, object, embed').length") == 0
        assert browser.errors() == []
        assert [u for u in browser.requests() if not u.startswith(("file:", "data:", "about:"))] == []
    open_tab(browser, page, "transcript")
    assert HOSTILE in browser.evaluate("document.getElementById('transcript').textContent")
    assert browser.evaluate("document.scripts.length") == 1


def test_tabs_and_expand_all(browser: Browser, page: Path) -> None:
    open_tab(browser, page, "overview")
    browser.evaluate("document.querySelector('nav.tabs a[href=\"#checks\"]').click()")
    assert visible(browser) == ["checks"]
    assert browser.evaluate("location.hash") == "#checks"
    open_tab(browser, page, "transcript")
    closed = "document.querySelectorAll('#transcript details:not([open])').length"
    assert browser.evaluate(closed) > 0
    browser.evaluate("document.querySelector('#transcript button.expand').click()")
    assert browser.evaluate(closed) == 0
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    browser.screenshot(ARTIFACTS / "run-viewer-transcript.png")
    for tab in ("overview", "snapshots", "checks"):
        open_tab(browser, page, tab)
        browser.screenshot(ARTIFACTS / f"run-viewer-{tab}.png")
    assert (ARTIFACTS / "run-viewer-overview.png").stat().st_size > 10_000
