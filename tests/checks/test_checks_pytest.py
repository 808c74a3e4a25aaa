"""The `pytest` kind: a real pytest run, one outcome per test from its JUnit report."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from checks_util import write

from compiler.contract import CheckSpec
from harness.artifacts.records import CheckOutcome
from harness.checks import CheckContext, run_check

TESTS = """\
import pytest
from pathlib import Path


def test_file_exists():
    assert Path("out.txt").exists(), "out.txt is missing"


class TestContent:
    def test_says_hello(self):
        assert Path("out.txt").read_text().strip() == "hello"

    @pytest.mark.parametrize("n", [1, 2])
    def test_param(self, n):
        assert n > 0


@pytest.mark.skip(reason="not here")
def test_skipped():
    pass
"""


def check(ws: Path, **params: Any) -> CheckOutcome:
    spec = CheckSpec(id="tests", kind="pytest", timeout_s=60, params={"python": sys.executable, **params})
    return run_check(spec, ws, CheckContext())


def test_every_test_has_its_outcome(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "")  # empty means "write": the check must not
    write(ws, {"tests/test_out.py": TESTS, "out.txt": "hi\n"})
    outcome = check(ws, tests="tests/test_out.py")
    assert outcome.outcome == "fail"
    assert {t.id: t.outcome for t in outcome.tests} == {
        "tests/test_out.py::test_file_exists": "pass",
        "tests/test_out.py::TestContent::test_says_hello": "fail",
        "tests/test_out.py::TestContent::test_param[1]": "pass",
        "tests/test_out.py::TestContent::test_param[2]": "pass",
        "tests/test_out.py::test_skipped": "skip",
    }
    failed = next(t for t in outcome.tests if t.outcome == "fail")
    assert "hello" in failed.message
    assert outcome.message.startswith(
        "1 of 5 test(s) failed: tests/test_out.py::TestContent::test_says_hello"
    )
    # Nothing of the run is left in the judged workspace.
    assert sorted(p.name for p in ws.rglob("*") if p.is_file()) == ["out.txt", "test_out.py"]


def test_all_passing_passes(ws: Path) -> None:
    write(ws, {"tests/test_out.py": TESTS, "out.txt": "hello\n"})
    outcome = check(ws, tests=["tests"], args=["-x"])
    assert (outcome.outcome, outcome.message) == ("pass", "4 test(s) passed, 1 skipped")


def test_a_test_file_that_cannot_import_fails(ws: Path) -> None:
    """The agent's module is missing: the suite fails (it is the agent's work), it did not crash."""
    write(
        ws,
        {
            "tests/test_sol.py": "from solution import answer\n\ndef test_answer():\n    assert answer() == 42\n"
        },
    )
    outcome = check(ws, tests="tests/test_sol.py")
    assert outcome.outcome == "fail"
    assert [t.outcome for t in outcome.tests] == ["fail"] and "solution" in outcome.tests[0].message


def test_no_tests_or_no_pytest_is_an_error(ws: Path) -> None:
    write(ws, {"tests/test_none.py": "x = 1\n"})
    assert check(ws, tests="tests/test_none.py").outcome == "error"
    missing = check(ws, tests="tests", python="/nonexistent/python3")
    assert missing.outcome == "error" and "could not start" in missing.message


def test_setup_runs_first_where_pytest_runs(ws: Path) -> None:
    """`setup` (a test script's data generation) runs before pytest, in order, in its folder; a
    setup that fails fails the check with its output, and pytest does not run."""
    write(ws, {"tests/test_out.py": TESTS})
    made = check(ws, tests="tests/test_out.py", setup=["echo hi > out.txt", "sed -i s/hi/hello/ out.txt"])
    assert (made.outcome, made.message) == ("pass", "4 test(s) passed, 1 skipped")
    broken = check(ws, tests="tests/test_out.py", setup=["echo making data >&2; exit 3", "echo no > out.txt"])
    assert broken.outcome == "fail" and broken.tests == ()
    assert broken.message.startswith("the setup before pytest failed") and "making data" in broken.message
    assert (ws / "out.txt").read_text() == "hello\n"


FORGE = """\
import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    outcome.get_result().outcome = "passed"
"""
FAKE_PYTEST = """\
import sys

for arg in sys.argv:
    if arg.startswith("--junitxml="):
        with open(arg.split("=", 1)[1], "w") as fh:
            fh.write('<testsuite tests="1"><testcase classname="tests.test_hidden" name="test_real" '
                     'file="tests/test_hidden.py"/></testsuite>')
sys.exit(0)
"""


@pytest.mark.parametrize(
    "planted",
    [
        pytest.param({"pytest.py": FAKE_PYTEST}, id="a-pytest-module"),
        pytest.param({"pytest/__init__.py": "", "pytest/__main__.py": FAKE_PYTEST}, id="a-pytest-package"),
        pytest.param({"conftest.py": FORGE}, id="a-conftest-at-the-root"),
        pytest.param({"pytest.ini": "[pytest]\naddopts = -p forge\n", "forge.py": FORGE}, id="an-ini-plugin"),
        pytest.param({"tox.ini": "[pytest]\naddopts = -p forge\n", "forge.py": FORGE}, id="a-tox-ini"),
        pytest.param(
            {"pyproject.toml": "[tool.pytest.ini_options]\naddopts = '-p forge'\n", "forge.py": FORGE},
            id="a-pyproject-plugin",
        ),
        pytest.param(
            {
                "pytest.ini": "[pytest]\npythonpath = evil\n",
                "evil/json.py": "def loads(s):\n    return 'forged'\n",
            },
            id="an-ini-pythonpath",
        ),
        pytest.param({"json.py": "def loads(s):\n    return 'forged'\n"}, id="a-stdlib-module"),
    ],
)
def test_what_the_agent_plants_in_the_workspace_cannot_pass_the_tests(
    ws: Path, planted: dict[str, str]
) -> None:
    """The workspace is the agent's; the hidden tests fail on it, whatever it leaves beside them."""
    hidden = "import json\n\n\ndef test_real():\n    assert json.loads('[1]') == 'forged'\n"
    write(ws, {"tests/test_hidden.py": hidden, **planted})
    outcome = check(ws, tests="tests/test_hidden.py")
    assert outcome.outcome == "fail", outcome.message
    assert [t.outcome for t in outcome.tests] == ["fail"]


def test_a_scenario_may_still_name_its_configuration(ws: Path) -> None:
    ini = "[pytest]\nmarkers =\n    slow: a marker the tests need\naddopts = --strict-markers\n"
    tests = "import pytest\n\n\n@pytest.mark.slow\ndef test_marked():\n    pass\n"
    write(ws, {"pytest.ini": ini, "tests/test_m.py": tests})
    assert check(ws, tests="tests/test_m.py", args=["-c", "pytest.ini"]).outcome == "pass"
