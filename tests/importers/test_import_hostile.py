"""A dataset is untrusted input: links out of a task, names that collide, task files of the wrong
shape, and a --name that is the project's own matrix are refusals, never a copied host file, a
crash or a lost spec. None of these runs a sandbox: each is refused before a task is reproduced."""

from __future__ import annotations

import shutil
from pathlib import Path

from harness.commands._importing import Importer
from tests.helpers import assay

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "import"


def _dataset(tmp_path: Path, *names: str) -> Path:
    data = tmp_path / "ds"
    for name in names:
        shutil.copytree(FIXTURES / "terminal-bench" / "csv-summary", data / name)
    return data


def _reasons(imp: Importer) -> dict[str, list[str]]:
    return {sid: o.reasons for sid, o in imp.outcomes.items()}


def test_a_link_out_of_the_task_refuses_it_and_is_never_read(project: Path, tmp_path: Path) -> None:
    data = _dataset(tmp_path, "leaky", "inward")
    (data / "leaky" / "tests" / "leak").symlink_to("/etc/hostname")
    (data / "leaky" / "tests" / "others").symlink_to(project / "specs")
    (data / "inward" / "tests" / "same").symlink_to("test_outputs.py")  # inside the task: fine
    imp = Importer(project, "terminal-bench", data, "ds")
    tasks = {t.id: t for t in imp.read()}
    assert tasks["ds-leaky"].refusals == [
        "tests/leak links outside the task: its target is never read",
        "tests/others links outside the task: its target is never read",
    ]
    assert not any("links outside" in r for r in tasks["ds-inward"].refusals)


def test_two_tasks_with_one_scenario_id_are_both_refused(project: Path, tmp_path: Path) -> None:
    data = _dataset(tmp_path, "a b", "a-b")
    imp = Importer(project, "terminal-bench", data, "ds")
    (task,) = imp.read()
    assert task.id == "ds-a-b" and any("comes to the same scenario id ds-a-b" in r for r in task.refusals)
    assert any("not imported" in r for r in _reasons(imp)["ds-a-b"])


def test_task_files_of_the_wrong_shape_are_a_refusal_not_a_crash(project: Path, tmp_path: Path) -> None:
    data = _dataset(tmp_path, "shape", "deep")
    (data / "shape" / "task.yaml").write_text("descriptions: 5\n")
    (data / "deep" / "task.yaml").write_text("x: " + "[" * 3000 + "]" * 3000 + "\n")
    tasks = {t.id: t for t in Importer(project, "terminal-bench", data, "ds").read()}
    assert set(tasks) == {"ds-shape", "ds-deep"}
    assert all(t.refusals for t in tasks.values())
    done = assay("--project", project, "import", "terminal-bench", data, "--name", "ds")
    assert "Traceback" not in done.stderr and done.returncode != 0, done.stderr


def test_a_name_that_is_the_projects_own_matrix_is_refused_up_front(project: Path, tmp_path: Path) -> None:
    own = project / "specs" / "matrices" / "mine.yaml"
    before = own.read_bytes()
    done = assay("--project", project, "import", "terminal-bench", _dataset(tmp_path, "t"), "--name", "mine")
    assert done.returncode == 2 and "specs/matrices/mine.yaml is the project's own matrix" in done.stderr
    assert own.read_bytes() == before and not (project / "scenarios").exists()


def test_an_import_that_brings_nothing_keeps_the_earlier_matrix_and_report(
    project: Path, tmp_path: Path
) -> None:
    matrix = project / "specs" / "matrices" / "ds.yaml"
    matrix.write_text("# Written by `assay import`; edit freely.\nkind: matrix\nid: ds\nagents: [noop]\n")
    (project / "imports").mkdir()
    (project / "imports" / "ds.json").write_text('{"imported": ["ds-earlier"]}\n')
    data = _dataset(tmp_path, "t")
    (data / "t" / "task.yaml").write_text("descriptions: 5\n")  # refused as read
    done = assay("--project", project, "import", "terminal-bench", data, "--name", "ds")
    assert "Traceback" not in done.stderr, done.stderr
    assert matrix.read_text().startswith("# Written by `assay import`; edit freely.\nkind: matrix\nid: ds\n")
    assert (project / "imports" / "ds.json").read_text() == '{"imported": ["ds-earlier"]}\n'


def test_a_time_limit_that_is_not_a_finite_positive_number_is_refused(project: Path, tmp_path: Path) -> None:
    data = _dataset(tmp_path, "inf", "neg", "ok")
    for name, limit in (("inf", ".inf"), ("neg", "-5")):
        task_yaml = data / name / "task.yaml"
        text = task_yaml.read_text()
        assert "max_agent_timeout_sec: 120.0" in text
        task_yaml.write_text(text.replace("max_agent_timeout_sec: 120.0", f"max_agent_timeout_sec: {limit}"))
    tasks = {t.id: t for t in Importer(project, "terminal-bench", data, "ds").read()}
    assert "max_agent_timeout_sec is inf: a time limit is a finite number" in " ".join(
        tasks["ds-inf"].refusals
    )
    assert "max_agent_timeout_sec is -5: a time limit is a finite number" in " ".join(
        tasks["ds-neg"].refusals
    )
    assert not any("time limit" in r for r in tasks["ds-ok"].refusals)
