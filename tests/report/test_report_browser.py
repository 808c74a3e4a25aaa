"""report.html in real headless Chromium: no console errors, no network, charts render, tables sort."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from cdp import ARTIFACTS, Browser
from report_tree import CONTROL, build_tree

from tests.helpers import assay

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]


def render(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    tree.mkdir()
    build_tree(tree)
    out = tmp_path / "out"
    proc = assay("report", tree, "--format", "html", "--out", out)
    assert proc.returncode == 0, proc.stderr
    return out / "report.html"


def test_report_html_in_chromium(browser: Browser, tmp_path: Path) -> None:
    page = render(tmp_path)
    text = page.read_text()
    assert "<script src=" not in text and "<link " not in text
    browser.call("Page.navigate", url=page.as_uri())
    browser.wait_event("Page.loadEventFired")
    rendered = browser.evaluate("""new Promise(resolve => {
        const ids = ["uplift-chart", "heatmap-chart", "tokens-chart"];
        const t0 = Date.now();
        (function poll() {
            const ok = ids.every(id => { const el = document.getElementById(id);
                return el && el._fullLayout && el.querySelector(".main-svg"); });
            if (ok || Date.now() - t0 > 15000) resolve(ok); else setTimeout(poll, 100);
        })();
    })""")
    assert rendered is True
    uplift = browser.evaluate(
        "(() => { const gd = document.getElementById('uplift-chart');"
        " return {traces: gd._fullData.length, points: gd.querySelectorAll('.scatterlayer .point').length,"
        " bars: gd.querySelectorAll('.errorbar').length, y: gd.data[0].y}; })()"
    )
    assert uplift["traces"] == 1 and uplift["points"] == 2 and uplift["bars"] == 2
    assert uplift["y"] == ["bin/none/off", "bin+skill/wiki/on"]
    heat = browser.evaluate(
        "(() => { const gd = document.getElementById('heatmap-chart');"
        " return {type: gd._fullData[0].type, rows: gd.data[0].y.length, cols: gd.data[0].x.length,"
        " drawn: gd.querySelectorAll('.heatmaplayer image, .hm image').length,"
        " labels: Array.from(gd.querySelectorAll('.heatmaplayer text, .hm text')).map(t => t.textContent)}; })()"
    )
    assert heat["type"] == "heatmap" and (heat["rows"], heat["cols"]) == (3, 3) and heat["drawn"] >= 1
    assert "5/5" in heat["labels"]
    # The scatter draws the control last, as open diamonds, so no treatment point hides it.
    scatter = browser.evaluate(
        "(() => { const gd = document.getElementById('tokens-chart');"
        " return gd._fullData.map(t => [t.name, t.marker.symbol, t.visible]); })()"
    )
    assert scatter[-1] == [f"{CONTROL} (control)", "diamond-open", True]
    assert all(symbol != "diamond-open" for _name, symbol, _visible in scatter[:-1])
    # The headline box is the first thing on the page; the details are collapsed until opened.
    first = browser.evaluate("document.querySelector('body > :not(h1)').id")
    assert first == "headline"
    closed = browser.evaluate(
        "Array.from(document.querySelectorAll('details.section')).filter(d => !d.open).map(d => d.id)"
    )
    assert "scenarios" in closed and "metrics" in closed
    # Sorting: the conditions table by tokens/run, descending after two clicks.
    order = browser.evaluate(
        "(() => { const t = document.getElementById('conditions-table');"
        " const th = Array.from(t.tHead.rows[0].cells).find(c => c.textContent === 'tokens/run');"
        " th.click(); th.click();"
        " return Array.from(t.tBodies[0].rows).map(r => r.cells[1].textContent); })()"
    )
    assert order[0] == "bin/none/off"
    links = browser.evaluate("Array.from(document.querySelectorAll('td.runs a')).map(a => a.href)")
    assert any(h.endswith("/tree/s1/scripted/bin/none/off/trial-01/diff.patch") for h in links)
    assert any(h.endswith("agent.log") for h in links)
    assert browser.errors() == []
    assert [u for u in browser.requests() if not u.startswith(("file:", "data:", "about:"))] == []
    shot = ARTIFACTS / "report-html.png"
    browser.screenshot(shot)
    assert shot.stat().st_size > 10_000


def test_demo_report_in_chromium(browser: Browser) -> None:
    """The report `nox -s demo` wrote (runs/demo/report.html), when it exists: loads clean, charts draw."""
    page = Path(os.environ.get("ASSAY_DEMO_REPORT", REPO / "runs" / "demo" / "report.html"))
    if not page.is_file():
        pytest.skip(f"{page} does not exist: run `nox -s demo` first")
    browser.events.clear()
    browser.call("Page.navigate", url=page.as_uri())
    browser.wait_event("Page.loadEventFired")
    drawn = browser.evaluate("""new Promise(resolve => {
        const t0 = Date.now();
        (function poll() {
            const ok = ["uplift-chart", "heatmap-chart"].every(id => { const el = document.getElementById(id);
                return el && el._fullData && el._fullData.length > 0 && el.querySelector(".main-svg"); });
            if (ok || Date.now() - t0 > 15000) resolve(ok); else setTimeout(poll, 100);
        })();
    })""")
    assert drawn is True
    # Issue 16: the page was ~25,000 px with a 600-row metrics table before the diagnostics. Now the
    # metrics come last, collapsed, after the diagnostics, and the page reads in a few screens.
    layout = browser.evaluate("""(() => {
        const m = document.getElementById("metrics"), d = document.getElementById("diagnostics");
        return [document.documentElement.scrollHeight, m.open,
                m.getBoundingClientRect().top > d.getBoundingClientRect().top];
    })()""")
    height, metrics_open, metrics_after_diagnostics = layout
    assert metrics_open is False and metrics_after_diagnostics is True
    assert height < 10_000, f"the demo report is {height} px tall"
    assert browser.errors() == []
    assert [u for u in browser.requests() if not u.startswith(("file:", "data:", "about:"))] == []
    shot = ARTIFACTS / "demo-report-html.png"
    browser.screenshot(shot)
    assert shot.stat().st_size > 10_000
