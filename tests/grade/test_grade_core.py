"""grade_run on hand-built run directories: statuses, hidden files, sections, persistence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.artifacts.records import RunStatus, read_grade
from harness.artifacts.store import FutureSchemaError
from harness.grade import grade_run, is_stale
from tests.grade.helpers import (
    BROKEN_PY,
    VALID_PY,
    call,
    check,
    command,
    demo_job,
    make_project,
    make_run,
    scenario,
)

HIDDEN_TEST = "import sys\nsys.path.insert(0, 'app')\nfrom main import handler\nassert handler(1) == 2, 'handler(1) != 2'\n"


def _project(tmp_path: Path) -> Path:
    return make_project(
        tmp_path / "proj",
        seed={"app/main.py": "def handler(x):\n    return x\n"},
        grader={"test_hidden.py": HIDDEN_TEST},
    )


def _scen(**kw: object):
    checks = [
        command("compiles", "python -m py_compile app/main.py", authority="python"),
        command("hidden-tests", "python test_hidden.py"),
        check("keeps-api", "contains", file="app/main.py", text="def handler("),
    ]
    return scenario(checks, grader="scenarios/demo/grader", **kw)


def test_passing_run_is_graded_and_persisted(tmp_path: Path) -> None:
    project = _project(tmp_path)
    run = make_run(tmp_path / "run", demo_job(_scen()), workspace={"app/main.py": VALID_PY}, trace=[])
    grade = grade_run(run, project=project)
    assert grade.status is RunStatus.GRADED
    assert [c.outcome for c in grade.checks] == ["pass", "pass", "pass"], grade.checks
    assert grade.passed and grade.usable
    assert grade.authorities["python"].status == "valid"
    assert read_grade(run) == grade
    # the preserved workspace is never touched: the hidden file exists only in the graded copy
    assert not (run / "workspace" / "test_hidden.py").exists()
    assert grade.grader_hash.startswith("g1-") and is_stale(run, project=project) is False


def test_agent_edit_of_hidden_tests_is_overwritten(tmp_path: Path) -> None:
    project = _project(tmp_path)
    cheat = {"app/main.py": "def handler(x):\n    return x\n", "test_hidden.py": "print('all good')\n"}
    run = make_run(tmp_path / "run", demo_job(_scen()), workspace=cheat)
    grade = grade_run(run, project=project)
    outcome = {c.id: c for c in grade.checks}
    assert outcome["hidden-tests"].outcome == "fail"
    assert not grade.passed and grade.failed_layers == ("agent",)
    assert any(d.startswith("hidden-tests:") for d in grade.diagnostics)


def test_hidden_files_required(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run", demo_job(_scen()), workspace={"app/main.py": VALID_PY})
    grade = grade_run(run, project=None)
    assert grade.status is RunStatus.UNGRADEABLE
    assert "grader files" in (grade.error or "")


def test_statuses(tmp_path: Path) -> None:
    project = _project(tmp_path)
    job = demo_job(_scen())
    crashed = make_run(tmp_path / "a", job, workspace={}, error="adapter crashed", exit_code=None)
    assert grade_run(crashed, project=project).status is RunStatus.FAILED_TO_RUN
    # a timeout is the agent's doing: graded on what it left (here: nothing), never failed_to_run
    timed = make_run(tmp_path / "b", job, workspace={}, timed_out=True, exit_code=None)
    g_timed = grade_run(timed, project=project)
    assert g_timed.status is RunStatus.GRADED and not g_timed.passed and g_timed.error is None
    missing = make_run(tmp_path / "c", job, workspace={"app/main.py": VALID_PY})
    (missing / "job.json").unlink()
    g = grade_run(missing, project=project)
    assert g.status is RunStatus.UNGRADEABLE and "job.json" in (g.error or "")
    no_ws = make_run(tmp_path / "d", job, workspace={})
    (no_ws / "workspace").rmdir()
    assert grade_run(no_ws, project=project).status is RunStatus.UNGRADEABLE
    # an agent that exited 1 is still graded: its work is evidence
    failed_agent = make_run(tmp_path / "e", job, workspace={"app/main.py": VALID_PY}, exit_code=1)
    assert grade_run(failed_agent, project=project).status is RunStatus.GRADED


def test_future_grade_is_refused(tmp_path: Path) -> None:
    project = _project(tmp_path)
    run = make_run(tmp_path / "run", demo_job(_scen()), workspace={"app/main.py": VALID_PY})
    grade_run(run, project=project)
    data = json.loads((run / "grade.json").read_text())
    data["schema_version"] = 99
    (run / "grade.json").write_text(json.dumps(data))
    with pytest.raises(FutureSchemaError):
        grade_run(run, project=project)


def test_existing_grade_reused_unless_regrade(tmp_path: Path) -> None:
    project = _project(tmp_path)
    run = make_run(tmp_path / "run", demo_job(_scen()), workspace={"app/main.py": VALID_PY})
    first = grade_run(run, project=project)
    (run / "workspace" / "app" / "main.py").write_text(BROKEN_PY)
    assert grade_run(run, project=project) == first
    again = grade_run(run, project=project, regrade=True)
    assert not again.passed and again.authorities["python"].status == "invalid"


def test_tool_use_and_friction(tmp_path: Path) -> None:
    project = _project(tmp_path)
    trace = [
        call(1, "mytool", "--help", out=800),
        call(2, "mytool", "chek", "app", exit=2, err=30),
        call(3, "mytool", "check", "app", exit=1, out=401),
        call(4, "mytool", "check", "app", exit=1, out=401),
        call(5, "mytool", "check", "app", exit=1, out=401),
        call(6, "mytool", "check", "app", exit=0),
        call(7, "mytool", "compile", exit=3),
    ]
    scen = _scen(notable_exits=(3, 4))
    run = make_run(
        tmp_path / "run",
        demo_job(scen),
        workspace={"app/main.py": VALID_PY},
        trace=trace,
        snapshots=[(5.5, "app/main.py", VALID_PY)],
    )
    g = grade_run(run, project=project)
    use = g.tool_use
    assert use.invocations == 7 and use.failures == 5
    assert use.by_subcommand["mytool check"].invocations == 4
    assert use.by_subcommand["mytool check"].failures == 3
    assert use.by_subcommand["mytool check"].est_output_tokens == (3 * 401 + 40 + 3) // 4
    assert [(n.index, n.exit) for n in use.notable_exits] == [(6, 3)]
    f = g.friction
    assert f.help_lookups == 1 and f.usage_errors == 1 and f.unknown_subcommands == 1
    # `check` after the failed `chek` is another subcommand, not a retry; the three runs of
    # `check` after a failing `check` are; the write at 5.5 makes the last one no identical repeat
    assert f.retries_after_failure == 3
    assert f.identical_repeats == 2
    assert f.repeated_failures == 3
    assert g.metrics["tool_calls"] == 7.0 and g.metrics["tool_failures"] == 5.0


def test_checks_run_without_network(tmp_path: Path) -> None:
    import socket
    import threading

    from harness.grade.core import _netns_prefix

    if not _netns_prefix():
        pytest.skip("this machine cannot make a network namespace (unshare); checks keep the host's network")
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    accepted: list[bool] = []

    def serve() -> None:
        server.settimeout(2)
        try:
            conn, _ = server.accept()
            accepted.append(True)
            conn.close()
        except OSError:
            pass

    thread = threading.Thread(target=serve)
    thread.start()
    project = _project(tmp_path)
    probe = f"python -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 2)\""
    scen = scenario([command("reaches-host", probe)], grader="scenarios/demo/grader")
    try:
        grade = grade_run(
            make_run(tmp_path / "run", demo_job(scen), workspace={"app/main.py": VALID_PY}), project=project
        )
    finally:
        server.close()
        thread.join()
    (outcome,) = grade.checks
    assert outcome.outcome == "fail" and not accepted  # the host's loopback was out of reach
    assert grade.details["network_isolated_checks"] is True
    assert grade.details["check_isolation"] in ("bwrap", "unshare", "netns")


def test_metrics_merge_field_by_field(tmp_path: Path) -> None:
    from harness.artifacts.records import RunnerMetrics, merge_metrics

    project = _project(tmp_path)
    run = make_run(
        tmp_path / "run",
        demo_job(_scen()),
        workspace={"app/main.py": VALID_PY},
        trace=[],
        metrics=RunnerMetrics(turns=4, input_tokens=0),
    )
    grade = grade_run(run, project=project)
    merged = merge_metrics(RunnerMetrics(turns=4, input_tokens=0), grade.metrics)
    assert merged["tool_calls"] == 0.0 and merged["input_tokens"] == 0  # real zeros stay zero
    assert merged["turns"] == 4 and merged["cost_usd"] is None  # unmeasured stays None
    with pytest.raises(ValueError, match="collides"):
        merge_metrics(RunnerMetrics(), {"turns": 1.0})


def test_hidden_files_never_written_through_agent_symlinks(tmp_path: Path) -> None:
    project = _project(tmp_path)
    outside = tmp_path / "outside.txt"
    outside.write_text("host file\n")
    run = make_run(tmp_path / "run", demo_job(_scen()), workspace={"app/main.py": VALID_PY})
    (run / "workspace" / "test_hidden.py").symlink_to(outside)  # where a hidden file will go
    grade = grade_run(run, project=project)
    assert outside.read_text() == "host file\n"
    assert {c.id: c.outcome for c in grade.checks}["hidden-tests"] == "pass"  # the real hidden test ran


def test_snapshot_states_never_written_through_agent_symlinks(tmp_path: Path) -> None:
    from tests.grade.helpers import BROKEN_PY

    project = _project(tmp_path)
    outside = tmp_path / "outside.py"
    outside.write_text("host file\n")
    scen = scenario([command("compiles", "python -m py_compile app/main.py", authority="python")])
    run = make_run(tmp_path / "run", demo_job(scen), workspace={}, snapshots=[(1, "app/main.py", BROKEN_PY)])
    (run / "workspace" / "app").mkdir()
    (run / "workspace" / "app" / "main.py").symlink_to(outside)  # the entry left as a link out
    grade = grade_run(run, project=project)
    assert outside.read_text() == "host file\n"
    assert [v.valid for v in grade.snapshots.verdicts] == [False]


def test_regrading_a_failing_pytest_run_is_identical(tmp_path: Path) -> None:
    from harness.artifacts.records import read_grade
    from tests.grade.helpers import strip_times

    project = _project(tmp_path)
    failing = "def test_it():\n    assert [object(), object()] == []\n"
    scen = scenario([command("tests", "python -m pytest -q -p no:cacheprovider test_app.py")])
    run = make_run(
        tmp_path / "run", demo_job(scen), workspace={"app/main.py": VALID_PY, "test_app.py": failing}
    )
    first = grade_run(run, project=project, regrade=True)
    assert "failed in" in first.checks[0].message  # pytest's own timing, masked
    second = grade_run(run, project=project, regrade=True)
    assert read_grade(run) == second
    assert strip_times(first.model_dump(mode="json")) == strip_times(second.model_dump(mode="json"))
    assert "0x<addr>" in first.checks[0].message or "<addr>" in first.checks[0].message
    assert "in <time>" in first.checks[0].message


FORGE = (
    "import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
    "    outcome = yield\n    outcome.get_result().outcome = 'passed'\n"
)


def test_what_the_agent_put_in_a_hidden_folder_is_gone_before_the_checks(tmp_path: Path) -> None:
    hidden = "import sys\nsys.path.insert(0, 'app')\nfrom main import handler\n\n\ndef test_it():\n    assert handler(1) == 2\n"
    project = make_project(
        tmp_path / "proj",
        seed={"app/main.py": "def handler(x):\n    return x\n"},
        grader={"hidden/test_h.py": hidden},
    )
    run_ = "python -m pytest -q -p no:cacheprovider -c /dev/null --rootdir=. --confcutdir=hidden hidden"
    scen = scenario([command("hidden-tests", run_)], grader="scenarios/demo/grader")
    # a conftest.py beside where the hidden tests will go would pass every test inside pytest
    planted = {"app/main.py": "def handler(x):\n    return x\n", "hidden/conftest.py": FORGE}
    grade = grade_run(make_run(tmp_path / "run", demo_job(scen), workspace=planted), project=project)
    assert {c.id: c.outcome for c in grade.checks} == {"hidden-tests": "fail"}, grade.checks


def test_the_overlay_clears_only_folders_the_seed_lacks(tmp_path: Path) -> None:
    from harness.sandbox.hidden import overlay

    grader, seed, dst = tmp_path / "grader", tmp_path / "seed", tmp_path / "dst"
    for root, files in {
        grader: {"tests/hidden/test_a.py": "a", "tests/test_b.py": "b", "extra/deep/test_c.py": "c"},
        seed: {"tests/test_visible.py": "v"},
        dst: {
            "tests/test_visible.py": "v",
            "tests/mine.py": "m",
            "tests/hidden/conftest.py": "x",
            "extra/deep/x.py": "x",
        },
    }.items():
        for rel, text in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
    overlay(grader, dst, seed)
    assert sorted(p.relative_to(dst).as_posix() for p in dst.rglob("*") if p.is_file()) == [
        "extra/deep/test_c.py",
        "tests/hidden/test_a.py",
        "tests/mine.py",  # a folder of the seed's: the agent's files there stay (its work may be there)
        "tests/test_b.py",
        "tests/test_visible.py",
    ]
