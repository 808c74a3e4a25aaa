"""The report templates' bytecode cache: the user's own folder, never the run tree's scratch, and
never a reason for a render to fail."""

from __future__ import annotations

import shutil
from pathlib import Path

import jinja2
import pytest

from harness.report import render_md


def test_the_cache_is_the_users_private_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "scratch"))  # a runner points it into its tree
    cache = render_md._bytecode_cache()
    assert isinstance(cache, jinja2.FileSystemBytecodeCache)
    folder = tmp_path / "cache" / "assay" / "jinja2"
    assert Path(cache.directory) == folder
    assert folder.stat().st_mode & 0o777 == 0o700


def test_a_folder_others_may_write_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    folder = tmp_path / "assay" / "jinja2"
    folder.mkdir(parents=True)
    folder.chmod(0o777)
    assert render_md._bytecode_cache() is None


def test_a_cache_folder_removed_under_it_costs_a_compile_not_a_render(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    cache = render_md._bytecode_cache()
    assert cache is not None
    env = jinja2.Environment(loader=jinja2.DictLoader({"t": "{{ x }}!"}), bytecode_cache=cache)
    assert env.get_template("t").render(x=1) == "1!"
    shutil.rmtree(tmp_path / "assay")
    fresh = jinja2.Environment(loader=jinja2.DictLoader({"u": "{{ x }}?"}), bytecode_cache=cache)
    assert fresh.get_template("u").render(x=2) == "2?"
