from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from compiler.contract import CheckSpec
from harness.checks import KINDS, CheckContext, run_checks


def test_every_registered_kind_loads() -> None:
    from harness.checks import get_kind

    for name in KINDS:
        assert get_kind(name).name == name


def test_outcomes_in_order_with_layer_and_user_kind(ws: Path) -> None:
    (ws / "f.txt").write_text("hello\n")
    checks = [
        CheckSpec(id="one", kind="contains", params={"file": "f.txt", "text": "hello"}),
        CheckSpec(
            id="two",
            kind="command",
            layer="ruff",
            authority="ruff",
            source_kind="lint",
            params={"run": "false"},
        ),
        CheckSpec(id="three", kind="no-such-kind"),
    ]
    out = run_checks(checks, ws, CheckContext())
    assert [(o.id, o.outcome) for o in out] == [("one", "pass"), ("two", "fail"), ("three", "error")]
    assert (out[1].kind, out[1].layer, out[1].authority) == ("lint", "ruff", "ruff")
    assert "unknown check kind 'no-such-kind'" in out[2].message and "contains" in out[2].message
    assert all(o.duration_s >= 0 for o in out)


def test_missing_required_parameter_is_error(ws: Path) -> None:
    [out] = run_checks([CheckSpec(id="x", kind="command")], ws)
    assert out.outcome == "error" and "needs the parameter 'run'" in out.message


def test_out_of_tree_kind_by_dotted_path(ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plugin = tmp_path / "plugins" / "my_kinds.py"
    plugin.parent.mkdir()
    plugin.write_text(
        textwrap.dedent(
            """
            from harness.checks import CheckUnavailable, Verdict

            class Even:
                name = "even"
                def run(self, spec, workspace, ctx):
                    n = len(list(workspace.iterdir()))
                    return Verdict(n % 2 == 0, f"{n} entries")

            class NeedsJudge:
                name = "needs-judge"
                def run(self, spec, workspace, ctx):
                    raise CheckUnavailable("no judge provider configured")
            """
        )
    )
    monkeypatch.syspath_prepend(str(plugin.parent))
    checks = [
        CheckSpec(id="a", kind="my_kinds:Even"),
        CheckSpec(id="b", kind="my_kinds.NeedsJudge"),
        CheckSpec(id="c", kind="my_kinds:Missing"),
    ]
    out = run_checks(checks, ws)
    assert (out[0].outcome, out[0].message) == ("pass", "0 entries")
    assert (out[1].outcome, out[1].message) == ("unavailable", "no judge provider configured")
    assert out[2].outcome == "error" and "cannot load check kind" in out[2].message
