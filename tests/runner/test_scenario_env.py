"""Scenario environments: built once per (interpreter, packages), reused, refused where impossible."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from compiler.contract import Environment
from harness.sandbox.scenario_env import CannotRunHere, ensure, find_interpreter, key

VERSION = f"{sys.version_info.major}.{sys.version_info.minor}"


def test_built_once_and_reused(tmp_path: Path) -> None:
    environment = Environment(python=VERSION)  # no package: no index needed
    first = ensure(environment, tmp_path)
    assert first.root == (tmp_path / ".cache" / "envs" / key(environment, first.interpreter)).resolve()
    assert first.python.is_file() and first.interpreter.version.startswith(VERSION)
    assert first.bin_dirs == (first.root / "venv" / "bin",) and first.lib_dirs == ()
    marker = first.root / "ready.json"
    stamp = marker.stat().st_mtime_ns
    again = ensure(environment, tmp_path)
    assert again == first and marker.stat().st_mtime_ns == stamp  # not rebuilt
    env = first.variables({"PATH": "/usr/bin"})
    assert env["PATH"] == f"{first.root / 'venv' / 'bin'}:/usr/bin"
    other = Environment(python=VERSION, pip=("pytest==8.4.1",))
    assert key(other, first.interpreter) != key(environment, first.interpreter)


def test_an_interpreter_the_machine_lacks_is_refused() -> None:
    with pytest.raises(CannotRunHere, match=r"cannot run here: python 3\.1 is not installed on this machine"):
        find_interpreter("3.1")
    assert find_interpreter(None).version.startswith(VERSION)
