"""What a reader sees first: the headline sentences, the page in order of importance, the details
collapsed, the terminal's headline and warnings; over real run trees written through the contract models."""

from __future__ import annotations

from pathlib import Path

import pytest
from report_tree import CONTROL, add_run

from harness.report import build_summary
from harness.report.render_html import render_html
from harness.report.render_md import render_markdown
from harness.report.summary import Summary
from harness.report.terminal import render_terminal

BIN = "bin/none/off"


def tree(root: Path, *, priced: bool = True, splits: tuple[str, ...] = ("test",)) -> Path:
    """Four scenarios x 4 trials: the control passes trial 1 only, bin passes trials 1-3; bin costs more
    per run ($0.02 vs $0.01) but solves three times as often."""
    for i, scenario in enumerate(("a", "b", "c", "d")):
        split = splits[i % len(splits)]
        for t in (1, 2, 3, 4):
            add_run(
                root,
                scenario=scenario,
                cell=CONTROL,
                trial=t,
                passed=t == 1,
                cost=0.01 if priced else None,
                split=split,
                family="lint",
            )
            add_run(
                root,
                scenario=scenario,
                cell=BIN,
                trial=t,
                passed=t <= 3,
                cost=0.02 if priced else None,
                tokens=(2000, 400),
                split=split,
                family="lint",
            )
            add_run(
                root, scenario=scenario, cell=CONTROL, trial=t, agent="oracle", passed=True, sanity="pass"
            )
    return root


@pytest.fixture(scope="module")
def summary(tmp_path_factory: pytest.TempPathFactory) -> Summary:
    return build_summary(tree(tmp_path_factory.mktemp("tree")))


def test_headline_sentence(summary: Summary) -> None:
    (line,) = summary.headline
    assert (line.agent, line.treatment, line.control, line.unit) == ("scripted", BIN, CONTROL, "usd")
    (u,) = [u for u in summary.uplifts if u.scenario is None and u.split is None]
    assert u.value == pytest.approx(0.5) and u.survives == line.survives
    # Every scenario agrees exactly: the floor keeps the interval honest at 4 scenarios.
    assert line.text.startswith(
        f"scripted, {BIN} against the control {CONTROL}: +50 points [{u.low * 100:+.0f}, {u.high * 100:+.0f}]".replace(
            "-", "−"
        )
    )
    assert f"Holm p = {u.p_adjusted:.3g}" in line.text and "over 1 comparison)" in line.text
    # $0.02 vs $0.01 per run; per solved task 16 x 0.02 / 12 = $0.0267 vs 16 x 0.01 / 4 = $0.04.
    assert "$0.0100 more per run ($0.0200 vs $0.0100)" in line.text
    assert "$0.0133 less per solved task ($0.0267 vs $0.0400)" in line.text


def test_headline_in_tokens_where_nothing_is_priced(tmp_path: Path) -> None:
    s = build_summary(tree(tmp_path, priced=False))
    (line,) = s.headline
    assert line.unit == "tokens"
    # 2,400 vs 1,200 tokens per run; per solved task 16 x 2,400 / 12 = 3,200 vs 16 x 1,200 / 4 = 4,800.
    assert "1,200 more tokens per run (2,400 vs 1,200)" in line.text
    assert "1,600 fewer tokens per solved task (3,200 vs 4,800)" in line.text


def test_markdown_in_order_of_importance(summary: Summary) -> None:
    text = render_markdown(summary)
    assert text.startswith("# assay report\n\n## Headline\n\n- scripted, bin/none/off against the control")
    order = [
        "## Headline",
        "## Evidence",
        "## Uplift over the control",
        "## Diagnostics",
        "## Conditions",
        "## Details",
        "<details><summary>Per scenario",
        "<details><summary>Metrics per cell",
        "## Findings by layer",
    ]
    positions = [text.index(marker) for marker in order]
    assert positions == sorted(positions)
    # One split and one family: their tables would repeat the aggregate, so they are left out.
    assert "Uplift by split" not in text and "Per split" not in text and "Per family" not in text
    assert "oracle should pass" in text and "(sanity: should pass)" in text
    assert "$0.0200 vs $0.0100" in text  # the uplift table's cost column
    assert "| tokens, treatment vs control (pairs both usable) |" in text  # which side is which


def test_two_splits_get_their_table(tmp_path: Path) -> None:
    text = render_markdown(build_summary(tree(tmp_path, splits=("train", "test"))))
    assert "<details><summary>Uplift by split (2 rows)</summary>" in text
    assert "<details><summary>Per split" in text and "Per family" not in text


def test_html_headline_first_and_details_collapsed(summary: Summary) -> None:
    page = render_html(summary)
    body = page[page.index("<body>") :]
    assert body.index('id="headline"') < body.index('id="uplift"') < body.index('id="diagnostics"')
    assert body.index('id="diagnostics"') < body.index('id="conditions"') < body.index('id="scenarios"')
    assert '<details class="section" id="scenarios"><summary>' in body
    assert '<details class="section" id="metrics"><summary>' in body
    assert summary.headline[0].text in body


def test_terminal_starts_with_the_headline_and_lists_warnings(tmp_path: Path) -> None:
    root = tree(tmp_path)
    add_run(root, scenario="a", cell=CONTROL, trial=9, agent="oracle", passed=False, sanity="pass")
    text = render_terminal(build_summary(root))
    lines = text.splitlines()
    assert lines[0].startswith("- scripted, bin/none/off against the control none/none/off: +50 points")
    assert any(line.startswith("oracle") and "sanity: should pass" in line for line in lines)
    assert any(line.startswith("warning: sanity: sanity agent oracle") for line in lines)
    assert not any("headroom" in line for line in lines)


def test_power_warning_names_what_the_design_could_detect(tmp_path: Path, summary: Summary) -> None:
    assert not [d for d in summary.diagnostics if d.kind == "power"]  # 4 agreeing scenarios: it survives
    for scenario in ("a", "b"):  # two scenarios: t with 1 df cannot tell +0.50 from none
        for t in (1, 2, 3, 4):
            add_run(tmp_path, scenario=scenario, cell=CONTROL, trial=t, passed=t == 1)
            add_run(tmp_path, scenario=scenario, cell=BIN, trial=t, passed=t <= 3)
    s = build_summary(tmp_path)
    (warning,) = [d for d in s.diagnostics if d.kind == "power"]
    assert warning.severity == "warning" and "1 of 1 uplift(s)" in warning.message
    assert "(2 scenarios)" in warning.message
    (line,) = warning.evidence
    assert line.startswith("scripted bin/none/off: +0.50 [") and "detectable at 80% power" in line
    assert any(x.startswith("warning: power: 1 of 1") for x in render_terminal(s).splitlines())


def test_a_sanity_agent_does_not_give_a_check_its_signal(tmp_path: Path) -> None:
    """A no-op fails every check by design: its failures must not hide a check that never fails for
    the agents measured."""
    for t in (1, 2):
        for cell in (CONTROL, BIN):
            checks = [
                ("works", "agent", "pass" if cell == BIN or t == 1 else "fail"),
                ("keeps-api", "agent", "pass"),
            ]
            add_run(tmp_path, scenario="s", cell=cell, trial=t, passed=checks[0][2] == "pass", checks=checks)
        failing = [("works", "agent", "fail"), ("keeps-api", "agent", "fail")]
        add_run(
            tmp_path,
            scenario="s",
            cell=CONTROL,
            trial=t,
            agent="noop",
            passed=False,
            sanity="fail",
            checks=failing,
        )
    (quiet,) = [d for d in build_summary(tmp_path).diagnostics if d.kind == "no-signal-check"]
    assert quiet.evidence == ["s/keeps-api (4 runs)"]
