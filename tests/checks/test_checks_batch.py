"""Check commands in one launch (`harness.checks.batching`, `harness.sandbox.batch`): real processes.

Without a sandbox wrapper the batch runs in the process wrapper's own pid namespace; the bwrap
and unshare batches are tested in tests/isolation/test_iso_checks.py.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import jinja2
import pytest
import yaml

from compiler.contract import CheckSpec
from harness.checks import CheckContext, batching, run_checks
from harness.checks.engine import scrub
from harness.checks.pytest_junit import parse_junit
from harness.sandbox import batch, proc
from tests.checks.checks_util import write
from tests.helpers import ROOT

pytestmark = pytest.mark.skipif(not proc.pidns_available(), reason="no pid namespaces here: no batch")

ENV = {
    "PATH": os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"]),
    "LANG": "C.UTF-8",
}


def cmd(id: str, run: str, **params: object) -> CheckSpec:
    return CheckSpec(id=id, kind="command", params={"run": run, **params})


def outcomes(checks: list[CheckSpec], ws: Path) -> list[tuple[str, str, str]]:
    """(id, outcome, message) with durations masked, as the grader records them."""
    return [(o.id, o.outcome, scrub(o.message, ws)) for o in run_checks(checks, ws, CheckContext(env=ENV))]


def test_a_check_leaves_nothing_to_the_next(ws: Path) -> None:
    write(ws, {"app.py": "VALUE = 1\n", "keep/data.txt": "seed\n"})
    (ws / "keep" / "data.txt").chmod(0o444)
    leaky = cmd(
        "leaky",
        "echo changed > app.py; chmod 644 keep/data.txt; echo x > keep/data.txt; touch planted.txt; "
        "mkdir -p deep/er; chmod 000 deep; (sleep 300 &) ; true",
    )
    checks = [
        leaky,
        cmd("app-untouched", "grep -qx 'VALUE = 1' app.py"),
        cmd("data-untouched", "grep -qx seed keep/data.txt && test ! -w keep/data.txt || test $(id -u) = 0"),
        cmd("no-new-files", "test ! -e planted.txt && test ! -e deep"),
        cmd("no-process-left", "! pgrep -x sleep"),
    ]
    got = outcomes(checks, ws)
    assert [(i, o) for i, o, _ in got] == [(c.id, "pass") for c in checks], got
    # the caller's own reading of the workspace afterwards sees it as it was given, too
    assert (ws / "app.py").read_text() == "VALUE = 1\n" and not (ws / "planted.txt").exists()
    assert oct((ws / "keep" / "data.txt").stat().st_mode & 0o777) == oct(0o444)


def test_batched_verdicts_equal_alone(ws: Path) -> None:
    write(
        ws,
        {
            "tests/test_x.py": "def test_ok():\n    assert 1\n\ndef test_bad():\n    assert 2 + 2 == 5\n",
            "tests/test_y.py": "def test_ok():\n    assert True\n",
            "tool.py": "import sys\nprint('argv', sys.argv[1:])\nsys.exit(int(sys.argv[1]))\n",
            "crash.py": "def f():\n    raise ValueError('boom')\n\nf()\n",
            "report.py": "import json\nprint(json.dumps({'findings': [1, 2]}))\n",
        },
    )
    pytest_env = {"PYTHONDONTWRITEBYTECODE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    checks = [
        cmd("tests-x", "python -m pytest -q -p no:cacheprovider tests/test_x.py", env=pytest_env),
        cmd("tests-y", "python -m pytest -q -p no:cacheprovider tests/test_y.py", env=pytest_env),
        cmd("exit-3", "python tool.py 3", exit=3),
        cmd("exit-0", "python tool.py 0", exit=[1, 2]),
        cmd("crash", "python crash.py"),
        cmd("count", "python report.py", result={"count": {"json_path": "$.findings", "max": 1}}),
        CheckSpec(id="junit", kind="pytest", params={"tests": "tests/test_y.py"}),
        cmd("shell", "echo out; echo err >&2; exit 4"),
    ]
    together = outcomes(checks, ws)
    alone = [outcomes([c], ws)[0] for c in checks]
    assert together == alone
    assert [o for _, o, _ in together] == ["fail", "pass", "pass", "fail", "fail", "fail", "pass", "fail"]
    assert "ValueError: boom" in together[4][2] and 'crash.py", line 4' in together[4][2]


def test_one_hang_or_crash_leaves_the_others_verdicts(ws: Path) -> None:
    write(ws, {"ok.txt": "ok\n"})
    checks = [
        CheckSpec(id="hangs", kind="command", params={"run": "sleep 60"}, timeout_s=0.5),
        cmd("ok", "grep -q ok ok.txt"),
        cmd("kills-server", "kill -9 1 $PPID; exit 0"),
        cmd("still-ok", "test -f ok.txt"),
        cmd("fails", "false"),
    ]
    got = outcomes(checks, ws)
    assert [(i, o) for i, o, _ in got] == [
        ("hangs", "error"),
        ("ok", "pass"),
        ("kills-server", "pass"),
        ("still-ok", "pass"),
        ("fails", "fail"),
    ]
    assert "timed out after 0.5s" in got[0][2]


def test_python_commands_fork_from_the_server_as_a_fresh_interpreter_would(ws: Path) -> None:
    write(
        ws,
        {
            "sub/show.py": (
                "import json, os, sys\n"
                "print(json.dumps({'argv': sys.argv, 'name': __name__, 'file': __file__,"
                " 'path0': sys.path[0], 'cwd': os.getcwd(), 'env': os.environ.get('ONLY_HERE'),"
                " 'main': sys.modules['__main__'].__dict__.get('__file__')}))\n"
                "raise SystemExit('bye')\n"
            ),
        },
    )
    env = {**ENV, "ONLY_HERE": "1"}
    commands = [
        batch.Command(("python", "sub/show.py", "a b"), env, 30),
        batch.Command(("python", "-m", "json.tool", "--help"), env, 30),
        batch.Command(
            (sys.executable, "-c", "import sys; print(sys.argv, sys.path[0]); 1 / 0", "x"), env, 30
        ),
        batch.Command(("bash", "-c", "python sub/show.py --opt=a=b -o key=value"), env, 30),
    ]
    got = batch.run_batch(commands, cwd=ws, launch=batch.Launch(None, False), output_cap=1 << 20)
    assert all(o is not None and o.forked for o in got), got
    fresh = [subprocess.run(c.argv, cwd=ws, env=env, capture_output=True, check=False) for c in commands]
    for outcome, done in zip(got, fresh, strict=True):
        assert outcome is not None
        assert (outcome.exit_code, outcome.stdout, outcome.stderr) == (
            done.returncode,
            done.stdout,
            done.stderr,
        )
    shown = got[0]
    assert shown is not None and json.loads(shown.stdout)["argv"] == ["sub/show.py", "a b"]


def test_a_forked_python_keeps_minus_p_as_a_fresh_one_would(ws: Path) -> None:
    # -P (Python 3.11): neither the working folder nor the script's goes first on sys.path, so a
    # module the agent left there (a json.py, a pytest.py) cannot stand in for the real one
    write(ws, {"json.py": "raise SystemExit('shadowed')\n", "show.py": "import json\nprint(json.__name__)\n"})
    commands = [
        batch.Command(("python", "-P", "show.py"), ENV, 30),
        batch.Command(("python", "-P", "-m", "show"), ENV, 30),  # not on the path at all
        batch.Command(("python", "show.py"), ENV, 30),
    ]
    got = batch.run_batch(commands, cwd=ws, launch=batch.Launch(None, False), output_cap=1 << 20)
    assert all(o is not None and o.forked for o in got), got
    fresh = [subprocess.run(c.argv, cwd=ws, env=c.env, capture_output=True, check=False) for c in commands]
    # (a fresh interpreter names itself by the name it was started as: python, not python3)
    assert [(o.exit_code, o.stdout, o.stderr.replace(b"python3:", b"python:")) for o in got if o] == [
        (d.returncode, d.stdout, d.stderr.replace(b"python3:", b"python:")) for d in fresh
    ]
    assert got[0] is not None and (got[0].exit_code, got[0].stdout) == (0, b"json\n")
    assert got[1] is not None and got[1].exit_code == 1 and b"No module named show" in got[1].stderr
    assert got[2] is not None and got[2].exit_code == 1 and b"shadowed" in got[2].stderr


def test_the_pytest_commands_a_suite_runs_fork_from_the_server(ws: Path) -> None:
    # pytest is what the server preloads, so the two ways a suite runs it must fork: the built-in
    # `pytest` kind and the example suite's `pytest` check kind (a shell string of `--opt=value`
    # words). A fresh interpreter imports pytest at a cost larger than most test suites take.
    write(ws, {"tests/test_a.py": "def test_ok():\n    assert 1\n\ndef test_bad():\n    assert 0, 'bad'\n"})
    kind = yaml.safe_load((ROOT / "specs" / "checks" / "pytest.yaml").read_text())
    checks = [
        CheckSpec(id="built-in", kind="pytest", params={"tests": "tests"}),
        CheckSpec(
            id="suite",
            kind="command",
            params={"run": jinja2.Template(kind["run"]).render(path="tests"), "env": kind["env"], "exit": 0},
        ),
    ]
    calls = [batching.plan(c, ws, CheckContext(env=ENV)) for c in checks]
    commands = [batch.Command(c.argv, c.env, 60) for c in calls if c is not None]
    got = batch.run_batch(
        commands, cwd=ws, launch=batch.Launch(None, False), preload=["pytest"], output_cap=1 << 20
    )
    assert len(commands) == 2 and all(o is not None and o.forked for o in got), got
    fresh = [subprocess.run(c.argv, cwd=ws, env=c.env, capture_output=True, check=False) for c in commands]
    assert [o.exit_code for o in got if o] == [d.returncode for d in fresh] == [1, 1]
    junit = [
        [(c.id, c.outcome, c.message) for c in parse_junit(x.stdout.decode()) or []]
        for x in (got[0], fresh[0])
        if x is not None
    ]
    assert junit[0] == junit[1] and [c[1] for c in junit[0]] == ["pass", "fail"]
    timeless = [re.sub(rb"in [0-9.]+s", b"", x.stdout) for x in (got[1], fresh[1]) if x is not None]
    assert timeless[0] == timeless[1] and b"1 failed, 1 passed" in timeless[0]


def test_the_workspace_modules_never_run_in_the_server(ws: Path) -> None:
    # `python -c` puts the working folder first on the path: the server's own imports (json before
    # anything else) would run what the agent left there, and could report any verdict it liked
    planted = "import os\nos.write(1, b'{\"index\": 0}\\n')\nraise SystemExit(0)\n"
    write(ws, {f"{name}.py": planted for name in ("json", "base64", "select", "ctypes", "types", "gc")})
    commands = [batch.Command(("false",), ENV, 30), batch.Command(("true",), ENV, 30)]
    got = batch.run_batch(commands, cwd=ws, launch=batch.Launch(None, False), output_cap=1 << 20)
    assert [o.exit_code if o is not None else None for o in got] == [1, 0]


def test_the_server_refuses_outside_a_pid_namespace_of_its_own(ws: Path) -> None:
    config = batch.server_config(batch.Launch(None, False), [], warm=False)
    request = batch.run_request([batch.Command(("true",), ENV, 5)], 100, warm=False)
    done = subprocess.run(
        [sys.executable, "-c", batch.server_source()],
        cwd=ws,
        env=ENV,
        input=batch.frame(config) + batch.frame(request),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert json.loads(done.stdout) == {"refused": "not in a pid namespace of its own"}
    assert batch.parse(done.stdout, 1) == [None]


def test_a_half_written_report_gives_no_outcome() -> None:
    row = {"index": 0, "exit": 0, "stdout": "", "stderr": "", "timed_out": False, "capped": False}
    line = json.dumps({**row, "duration_s": 0.1, "forked": False}).encode()
    assert batch.parse(line + b"\n" + line[:20], 2)[0] is not None
    assert batch.parse(line[:-5] + b"\n", 1) == [None]


def test_what_a_server_preloads_is_compiled_where_the_harness_can_write() -> None:
    """Inside the sandbox the environment is read-only: the harness byte-compiles the preloaded
    distributions and what they require (pytest, then pluggy), or each server compiled them anew."""
    import importlib.util
    from importlib import metadata

    from harness.sandbox import batch as batch_mod

    pluggy = metadata.distribution("pluggy")
    source = next(Path(str(pluggy.locate_file(f))) for f in pluggy.files or () if f.name == "_hooks.py")
    cached = Path(importlib.util.cache_from_source(str(source)))
    cached.unlink(missing_ok=True)
    batch_mod._compiled.cache_clear()
    batch_mod.compile_preload(["pytest"])
    assert cached.is_file()
