"""`pytest`: run a pytest suite on the workspace; one outcome per test, read from JUnit XML.

Parameters: `tests` (a path or a list: test files or folders, workspace-relative, or absolute
paths the scenario mounts), `args` (extra pytest arguments), `cwd` (default the workspace), `env`
and `setup` (shell commands run first, in the same place: a test script that regenerates its
data before pytest; they may change the workspace as that script did, and one that fails fails
the check). The check passes when pytest exits 0 having run at least one test, none failing; each
test's own outcome goes into the check's `tests` (grade.json lists them one by one), and a
negative may name one as `<check id>::<test id>`.

pytest runs with the check commands' isolation, environment and interpreter (the scenario's
environment when it has one, else the harness's). Its JUnit report is written to a file
descriptor of its own (fd 3, the command's stdout; its terminal output goes to stderr), so
nothing is written into the workspace being judged. Exit 2 with a report (a test file that
does not import: the agent's work is missing) is a failure; no report at all, no test
collected (exit 5), a usage or internal error (exit 3, 4) means the check could not run.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path, PurePosixPath
from typing import Any

from compiler.contract import CheckSpec
from harness.artifacts.records import CaseOutcome
from harness.checks import _proc
from harness.checks.base import CheckContext, CheckError, Verdict, as_list, inside, param, sandbox_cwd
from harness.checks.command import command_env, shell, tail

SETUP_FAILED = 198
SETUP = f'"$0" -ec "$1" 1>&2 || exit {SETUP_FAILED}; shift; exec "$@"'
"""The setup commands ($1, run by the shell $0, their output on stderr), then "$@"; exit 198 when
they fail. Without setup pytest's interpreter is the command itself: a batch server forks it."""

BOOT = """\
import os, sys
os.dup2(1, 3)
os.dup2(2, 1)
sys.argv.append("--junitxml=/dev/fd/3")
here = os.getcwd()
sys.path[:] = [p for p in sys.path if p not in ("", here)] + [here]
import json
tests = [os.path.abspath(t.split("::", 1)[0]) for t in json.loads(os.environ.pop("ASSAY_PYTEST_TESTS"))]
ancestor = os.path.commonpath([t if os.path.isdir(t) else os.path.dirname(t) for t in tests])
rootdir = os.path.commonpath([here, ancestor])
rootdir = ancestor if rootdir == os.sep else rootdir
sys.argv[1:1] = ["-c", os.devnull, "--rootdir=" + rootdir, "--confcutdir=" + ancestor]
import pytest
sys.argv[0] = "pytest"
sys.exit(pytest.console_main())
"""
"""`python -m pytest` made safe to point at a workspace the agent wrote, its JUnit report alone on
stdout (fd 3 takes the original stdout, the terminal output goes to stderr):

- the working folder goes LAST on sys.path (under `-m` it comes first): the workspace's modules
  stay importable by the tests, yet a `pytest.py`, `_pytest/` or `json.py` left there cannot
  stand in for pytest or the standard library; `--import-mode=append` keeps the test folders
  behind them too;
- no configuration file is read (`-c /dev/null`): no pytest.ini, tox.ini, setup.cfg or
  pyproject.toml the agent wrote (`addopts = -p its_plugin`, `pythonpath`) applies. The rootdir
  is the one pytest picks without a configuration file (the common folder of the working folder
  and the tests, else the tests' own), so test ids stay as they were;
- no conftest.py above the tests' common folder is loaded (`--confcutdir`): one the agent put at
  the workspace's root would run inside pytest and could pass every test. One in the tests'
  own folder is the suite's and is loaded like the tests: tests the agent may not edit stay out
  of the scenario's `writable`, with an `unchanged` check on them (docs/checks.md).

The test paths come in ASSAY_PYTEST_TESTS (a JSON list), resolved inside the sandbox. A
scenario that wants a file's configuration names it in `args` (`["-c", "pyproject.toml"]`:
later arguments win). What this cannot stop: the code under test runs in pytest's process, so
an agent's module that the tests import can still tamper with pytest (docs/isolation.md)."""

PYTEST = ("-c", BOOT, "-p", "no:cacheprovider", "-o", "junit_family=xunit1", "-q", "--import-mode=append")
"""No cache folder in the judged workspace; xunit1 reports carry each test's file."""

MESSAGE_CHARS = 2000


class PytestCheck:
    """A pytest suite whose tests are judged one by one."""

    name = "pytest"

    def batchable(self, spec: CheckSpec) -> bool:
        """Its command may run in a batch (`harness.checks.engine`): the verdict reads only its output."""
        return True

    def run(self, spec: CheckSpec, workspace: Path, ctx: CheckContext) -> Verdict:
        tests = [str(t) for t in as_list(param(spec, "tests", required=True))]
        args = [str(a) for a in as_list(param(spec, "args"))]
        python = str(param(spec, "python", "python3"))
        setup = [str(c) for c in as_list(param(spec, "setup"))]
        argv = [python, *PYTEST, *args, *tests]
        if setup:
            sh = shell()
            argv = [sh, "-c", SETUP, sh, "\n".join(setup), *argv]
        where = str(param(spec, "cwd", "."))
        if where.startswith("/"):  # a folder only the sandbox shows (the workdir, /tests)
            argv, cwd = sandbox_cwd(argv, where, ctx), workspace
        else:
            cwd = _cwd(spec, workspace, ctx)
        if ctx.wrap is not None:
            argv = list(ctx.wrap(argv))
        timeout = ctx.timeout_for(spec)
        env = {**command_env(spec, workspace, ctx), "ASSAY_PYTEST_TESTS": json.dumps(tests)}
        done = ctx.run_command(argv, cwd=cwd, env=env, timeout_s=timeout)
        if done.timed_out:
            raise CheckError(f"pytest timed out after {timeout:g}s{tail(done.stderr, workspace)}")
        if done.capped:
            raise CheckError(f"pytest printed more than {_proc.OUTPUT_CAP} bytes and was ended")
        cases = parse_junit(done.stdout)
        code = done.exit_code
        if setup and code == SETUP_FAILED and cases is None:
            return Verdict(False, f"the setup before pytest failed{tail(done.stderr, workspace)}", ())
        if code in (126, 127):
            raise CheckError(f"pytest could not start (exit {code}){tail(done.stderr, workspace)}")
        if code in (3, 4) or (cases is None and code != 5):
            raise CheckError(f"pytest exited {code} without a test report{tail(done.stderr, workspace)}")
        if code == 5 or not cases:
            raise CheckError(f"pytest collected no test from {' '.join(tests)}{tail(done.stderr, workspace)}")
        failed = [c for c in cases if c.outcome == "fail"]
        ran = len(cases)
        if failed:
            first = failed[0]
            return Verdict(
                False,
                f"{len(failed)} of {ran} test(s) failed: {first.id}: {first.message[:300]}",
                tuple(cases),
            )
        if code != 0:
            return Verdict(
                False,
                f"pytest exited {code} though no test failed{tail(done.stderr, workspace)}",
                tuple(cases),
            )
        skipped = sum(c.outcome == "skip" for c in cases)
        return Verdict(
            True,
            f"{ran - skipped} test(s) passed" + (f", {skipped} skipped" if skipped else ""),
            tuple(cases),
        )


def _cwd(spec: CheckSpec, workspace: Path, ctx: CheckContext) -> Path:
    cwd = inside(workspace, str(param(spec, "cwd", ".")))
    if not cwd.is_dir():
        raise CheckError(f"working folder {param(spec, 'cwd')!r} does not exist in the workspace")
    return cwd


def _case_id(case: ET.Element) -> str:
    """pytest's node id of a test case (file::Class::name) from an xunit1 testcase element."""
    name = case.get("name", "?")
    file = case.get("file") or ""
    classname = case.get("classname", "")
    if not file:
        return f"{classname}::{name}" if classname else name
    module = ".".join(PurePosixPath(file).with_suffix("").parts)
    cls = classname[len(module) + 1 :] if classname.startswith(module + ".") else ""
    return "::".join(p for p in (file, *cls.split("."), name) if p)


def _text(element: ET.Element) -> str:
    message = element.get("message") or ""
    body = (element.text or "").strip()
    text = message if not body or body in message else f"{message}\n{body}".strip()
    return text[:MESSAGE_CHARS]


def parse_junit(report: str) -> list[CaseOutcome] | None:
    """The test cases of a JUnit XML report, or None when there is no readable report."""
    if "<testsuite" not in report:
        return None
    try:
        root = ET.fromstring(report.strip())
    except ET.ParseError:
        return None
    cases: list[CaseOutcome] = []
    for case in root.iter("testcase"):
        outcome, message = "pass", ""
        for child in case:
            if child.tag in ("failure", "error"):
                outcome, message = "fail", (f"{child.tag}: " if child.tag == "error" else "") + _text(child)
                break
            if child.tag == "skipped":
                outcome, message = "skip", _text(child)
        cases.append(
            CaseOutcome(
                id=_case_id(case), outcome=outcome, message=message, duration_s=_seconds(case.get("time"))
            )
        )
    return cases


def _seconds(value: Any) -> float:
    try:
        return round(float(value), 3)
    except (TypeError, ValueError):
        return 0.0
