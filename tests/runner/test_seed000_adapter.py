"""A seed 000 adapter named by its host path runs unchanged; a harness-side failure to start it is
`failed_to_run` with its cause, never the agent's failure."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from tests.helpers import FIXTURES, assay

pytestmark = pytest.mark.isolation

ADAPTER = """\
import json, os, sys
prompt = sys.stdin.read()
open("greet.py", "w").write('print("hello")\\n')
json.dump({"greeting": "hello"}, open("answer.json", "w"))
with open(os.environ["BENCH_USAGE"], "a") as usage:  # seed 000's usage report, one row per turn
    usage.write(json.dumps({"t": 1.0, "input": 120, "output": 30, "cache_read": 0}) + "\\n")
print("seed 000 adapter ran in", os.getcwd(), "with", len(prompt), "prompt bytes")
try:
    open(__file__, "a").write("# changed by the agent\\n")
except OSError as exc:
    print("the adapter cannot change itself:", exc.strerror)
"""


def _project(tmp_path: Path, command: str) -> Path:
    root = tmp_path / "project"
    shutil.copytree(FIXTURES / "seed000", root)
    (root / "specs" / "agents" / "mine.yaml").write_text(
        f"kind: agent\nid: mine\nadapter: command\ncommand: {json.dumps(command)}\n", encoding="utf-8"
    )
    (root / "specs" / "matrices" / "seed000.yaml").write_text(
        "kind: matrix\nid: seed000\nagents: [mine]\nscenarios: all\ntrials: 1\n", encoding="utf-8"
    )
    return root


def _grade(root: Path) -> dict[str, object]:
    (path,) = (root / "runs").rglob("grade.json")
    return dict(json.loads(path.read_text()))


def test_adapter_by_host_path_runs_unchanged(tmp_path: Path) -> None:
    adapter = tmp_path / "elsewhere" / "adapters" / "my_agent.py"  # outside the project and the sandbox
    adapter.parent.mkdir(parents=True)
    adapter.write_text(ADAPTER, encoding="utf-8")
    adapter.chmod(0o666)  # only the read-only mount keeps the agent from changing it
    root = _project(tmp_path, f"{sys.executable} {adapter}")
    assert assay("--project", root, "compile").returncode == 0
    job = json.loads((root / "generated" / "jobs" / "seed000" / "greet.json").read_text())
    assert str(adapter) in job["agents"]["mine"]["host_files"]  # (and the interpreter, named by its path)
    ran = assay("--project", root, "matrix", "seed000")
    assert ran.returncode == 0, ran.stderr
    grade = _grade(root)
    assert (grade["status"], grade["passed"]) == ("graded", True), grade
    assert adapter.read_text(encoding="utf-8") == ADAPTER  # mounted read-only
    (run,) = (root / "runs").rglob("run.json")
    metrics = json.loads(run.read_text())["metrics"]
    assert (metrics["input_tokens"], metrics["output_tokens"], metrics["turns"]) == (120, 30, 1)
    (log,) = (root / "runs").rglob("agent.log")
    assert "the adapter cannot change itself: Read-only file system" in log.read_text()


def test_a_missing_adapter_file_is_refused_at_compile_time(tmp_path: Path) -> None:
    root = _project(tmp_path, f"python3 {tmp_path / 'nowhere' / 'agent.py'}")
    done = assay("--project", root, "compile")
    assert done.returncode == 2
    assert f"error[E239]: command: the command names {tmp_path / 'nowhere' / 'agent.py'}" in done.stderr


def test_an_adapter_gone_after_compiling_fails_to_run(tmp_path: Path) -> None:
    adapter = tmp_path / "adapters" / "agent.sh"
    adapter.parent.mkdir(parents=True)
    adapter.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    adapter.chmod(0o755)
    root = _project(tmp_path, str(adapter))
    assert assay("--project", root, "compile").returncode == 0
    adapter.unlink()
    assert assay("--project", root, "matrix", "seed000").returncode == 1
    grade = _grade(root)
    assert grade["status"] == "failed_to_run"
    assert f"its command names {adapter}, missing on this machine" in str(grade["error"])


def test_a_program_the_shell_cannot_find_fails_to_run(tmp_path: Path) -> None:
    root = _project(tmp_path, "no-such-agent-binary --prompt-on-stdin")
    assert assay("--project", root, "compile").returncode == 0
    assert assay("--project", root, "matrix", "seed000").returncode == 1
    grade = _grade(root)
    assert grade["status"] == "failed_to_run"
    assert "the adapter cannot start in the sandbox (exit 127)" in str(grade["error"])
    assert "no-such-agent-binary is not found in the sandbox" in str(grade["error"])


def test_an_adapter_the_sandbox_cannot_read_fails_to_run(tmp_path: Path) -> None:
    """Exit 126 from the launch itself: the file is there, the sandbox's user cannot read it."""
    adapter = tmp_path / "adapters" / "my_agent.py"
    adapter.parent.mkdir(parents=True)
    adapter.write_text(ADAPTER, encoding="utf-8")
    root = _project(tmp_path, f"{sys.executable} {adapter}")
    assert assay("--project", root, "compile").returncode == 0
    adapter.chmod(0o000)  # after compiling: the compiler hashes the adapter
    try:
        assert assay("--project", root, "matrix", "seed000").returncode == 1
    finally:
        adapter.chmod(0o644)
    grade = _grade(root)
    assert grade["status"] == "failed_to_run"
    assert "the adapter cannot start in the sandbox (exit 126)" in str(grade["error"])
    assert f"{adapter} is not readable in the sandbox" in str(grade["error"])


def test_an_adapter_that_is_not_executable_fails_to_run(tmp_path: Path) -> None:
    """Exit 126 from the shell that launches it: the program named by its path has no x bit."""
    adapter = tmp_path / "adapters" / "agent.sh"
    adapter.parent.mkdir(parents=True)
    adapter.write_text('#!/bin/sh\necho \'{"greeting": "hello"}\' > answer.json\n', encoding="utf-8")
    adapter.chmod(0o644)
    root = _project(tmp_path, str(adapter))
    assert assay("--project", root, "compile").returncode == 0
    assert assay("--project", root, "matrix", "seed000").returncode == 1
    grade = _grade(root)
    assert grade["status"] == "failed_to_run", grade
    assert "(exit 126)" in str(grade["error"]) and "Permission denied" in str(grade["error"])


def test_an_adapter_script_whose_interpreter_is_missing_fails_to_run(tmp_path: Path) -> None:
    """The kernel's exec fails "not found" for a script whose #! names no program: the harness's launch
    check sees it before the adapter runs (not a line in the agent's log)."""
    adapter = tmp_path / "adapters" / "agent.sh"
    adapter.parent.mkdir(parents=True)
    adapter.write_text("#!/no/such/interpreter\necho hi\n", encoding="utf-8")
    adapter.chmod(0o755)
    root = _project(tmp_path, str(adapter))
    assert assay("--project", root, "compile").returncode == 0
    assert assay("--project", root, "matrix", "seed000").returncode == 1
    grade = _grade(root)
    assert grade["status"] == "failed_to_run", grade
    assert "the adapter cannot start in the sandbox (exit 127)" in str(grade["error"])
    assert "names the interpreter /no/such/interpreter, which is not in the sandbox" in str(grade["error"])


def test_the_seed000_scenario_validates_unchanged(tmp_path: Path) -> None:
    """`assay validate` on seed 000's scenario.json as written: `expected`, negatives on the seed."""
    root = tmp_path / "project"
    shutil.copytree(FIXTURES / "seed000", root)
    before = sorted((p.relative_to(root), p.read_bytes()) for p in root.rglob("*") if p.is_file())
    done = assay("--project", root, "validate", "--strict")
    assert done.returncode == 0, done.stdout + done.stderr
    after = sorted(
        (p.relative_to(root), p.read_bytes())
        for p in root.rglob("*")
        if p.is_file() and p.relative_to(root).parts[0] not in ("generated", ".cache", "runs")
    )
    assert after == before
