"""Content-addressed trees out, one archive back, installed so nothing half-written looks finished."""

from __future__ import annotations

import io
import json
import os
import tarfile
from pathlib import Path

import pytest

from harness.artifacts.run_tree import find_runs
from harness.batch.transport import (
    Bundle,
    TransportError,
    hash_tree,
    install_run,
    job_paths,
    materialise,
    pack_run,
    pack_tree,
)
from tests.dask.conftest import cells, cluster_job, scripted
from tests.helpers import command_agent


def test_job_paths_are_the_outermost_project_paths_a_job_names(project: Path) -> None:
    _control, binary = cells()
    job = cluster_job(scripted(), binary, 1)
    assert job_paths(job, project) == ["scenarios/fix", "scripts/fixer.yaml", "tools/bin"]
    other = cluster_job(command_agent("cat /etc/hostname runs/x generated/y"), binary, 1)
    assert job_paths(other, project) == ["scenarios/fix", "tools/bin"]
    (project / "specs" / "expectations").mkdir(parents=True)  # the grader reads it: always shipped
    assert job_paths(job, project) == ["scenarios/fix", "scripts/fixer.yaml", "specs", "tools/bin"]


def test_tree_digest_follows_content_and_exec_bit_not_mtime(project: Path) -> None:
    first = hash_tree(project, "scenarios/fix")
    main = project / "scenarios/fix/seed/app/main.py"
    os.utime(main, (1, 1))
    assert hash_tree(project, "scenarios/fix") == first
    main.write_text(main.read_text() + "# changed\n")
    changed = hash_tree(project, "scenarios/fix")
    assert changed.digest != first.digest
    main.chmod(0o755)
    assert hash_tree(project, "scenarios/fix").digest != changed.digest


def test_materialised_project_keeps_modes_links_and_single_files(project: Path, tmp_path: Path) -> None:
    (project / "tools/bin/alias").symlink_to("mytool")
    rels = ["scenarios/fix", "tools/bin", "scripts/fixer.yaml"]
    trees = tuple(hash_tree(project, rel) for rel in rels)
    blobs = {t.digest: pack_tree(project, t.rel) for t in trees}
    cache = tmp_path / "cache"
    made = materialise(cache, Bundle(trees=trees), blobs)
    assert (made / "scenarios/fix/seed/app/main.py").read_bytes() == (
        project / "scenarios/fix/seed/app/main.py"
    ).read_bytes()
    assert os.access(made / "tools/bin/mytool", os.X_OK)
    assert not os.access(made / "scenarios/fix/seed/app/main.py", os.X_OK)
    assert os.readlink(made / "tools/bin/alias") == "mytool"
    assert (made / "scripts/fixer.yaml").is_file()
    # Same bundle, same folder; the cache is not rebuilt from the (now missing) bytes.
    assert materialise(cache, Bundle(trees=trees), {}) == made
    assert len(list((cache / "trees").iterdir())) == 3


def test_packed_trees_are_deterministic(project: Path) -> None:
    first = pack_tree(project, "scenarios/fix")
    os.utime(project / "scenarios/fix/seed/README.md", (5, 5))
    assert pack_tree(project, "scenarios/fix") == first


def _run_dir(tmp_path: Path, marker: str) -> Path:
    run = tmp_path / "src" / marker
    (run / "workspace" / "app").mkdir(parents=True)
    (run / "workspace" / "app" / "main.py").write_text(marker)
    (run / "knowledge").mkdir()
    (run / "knowledge" / "page.md").write_text("read only")
    (run / "knowledge").chmod(0o555)
    (run / "job.json").write_text("{}")
    (run / "run.json").write_text(json.dumps({"marker": marker}))
    return run


def test_install_replaces_an_unfinished_attempt_and_writes_run_json_last(tmp_path: Path) -> None:
    data = pack_run(_run_dir(tmp_path, "new"))
    dest = tmp_path / "runs" / "trial-01"
    (dest / "workspace").mkdir(parents=True)
    (dest / "workspace" / "stale.txt").write_text("left by a killed attempt")
    install_run(data, dest)
    assert json.loads((dest / "run.json").read_text()) == {"marker": "new"}
    assert (dest / "workspace" / "app" / "main.py").read_text() == "new"
    assert not (dest / "workspace" / "stale.txt").exists()
    assert oct((dest / "knowledge").stat().st_mode & 0o777) == oct(0o555)
    assert sorted(p.name for p in dest.parent.iterdir()) == ["trial-01"]
    install_run(pack_run(_run_dir(tmp_path, "again")), dest)  # read-only parts of the old run go too
    assert json.loads((dest / "run.json").read_text()) == {"marker": "again"}


def test_leftovers_of_a_killed_install_never_look_finished(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    dest = runs / "m" / "trial-01"
    dest.parent.mkdir(parents=True)
    # What a client killed during unpacking leaves: an incoming folder, never with run.json.
    leftover = dest.parent / ".trial-01.incoming-0123456789ab"
    (leftover / "workspace").mkdir(parents=True)
    assert find_runs(runs) == []
    install_run(pack_run(_run_dir(tmp_path, "x")), dest)
    assert not leftover.exists()
    assert find_runs(runs) == [dest]


def test_an_archive_without_run_json_is_refused_and_dest_untouched(tmp_path: Path) -> None:
    run = _run_dir(tmp_path, "x")
    (run / "run.json").unlink()
    dest = tmp_path / "runs" / "trial-01"
    with pytest.raises(TransportError, match=r"no run\.json"):
        install_run(pack_run(run), dest)
    assert not dest.exists()
    assert list(dest.parent.iterdir()) == []


def _tar(*members: tuple[str, bytes | None, str | None]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, data, link in members:
            info = tarfile.TarInfo(name)
            if link is not None:
                info.type, info.linkname = tarfile.SYMTYPE, link
                tar.addfile(info)
            else:
                info.size = len(data or b"")
                tar.addfile(info, io.BytesIO(data or b""))
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("members", "message"),
    [
        ([("../evil", b"x", None), ("run.json", b"{}", None)], "escapes"),
        ([("/abs", b"x", None), ("run.json", b"{}", None)], "escapes"),
        ([("ws", None, "/etc"), ("ws/passwd", b"x", None), ("run.json", b"{}", None)], "below a symlink"),
        ([("pw", None, "/etc/passwd"), ("pw", b"x", None), ("run.json", b"{}", None)], "twice"),
        ([("pw", None, "/etc/passwd"), ("./pw", b"x", None), ("run.json", b"{}", None)], "twice"),
    ],
)
def test_hostile_archives_are_refused(
    tmp_path: Path, members: list[tuple[str, bytes | None, str | None]], message: str
) -> None:
    with pytest.raises(TransportError, match=message):
        install_run(_tar(*members), tmp_path / "runs" / "trial-01")
    assert not (tmp_path / "runs" / "trial-01").exists()


def test_an_agents_links_come_back_as_links_and_no_setuid_bit_comes_back(tmp_path: Path) -> None:
    run = _run_dir(tmp_path, "links")
    venv = run / "workspace" / ".venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "python").symlink_to("/usr/bin/python3")  # what `python -m venv` makes
    (run / "workspace" / "up").symlink_to("../../../outside")
    tool = run / "workspace" / "tool"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o6777)
    dest = tmp_path / "runs" / "trial-01"
    install_run(pack_run(run), dest)
    assert os.readlink(dest / "workspace/.venv/bin/python") == "/usr/bin/python3"
    assert os.readlink(dest / "workspace/up") == "../../../outside"
    assert oct((dest / "workspace/tool").stat().st_mode & 0o7777) == oct(0o755)
