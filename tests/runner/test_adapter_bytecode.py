"""Adapters start from bytecode: the sandbox cannot write it, so the harness compiles the package."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import adapters
from harness.trial import agent


def test_building_an_adapter_command_leaves_the_package_compiled() -> None:
    source = Path(adapters.__file__).resolve().parent / "scripted.py"
    cached = Path(importlib.util.cache_from_source(str(source)))
    cached.unlink(missing_ok=True)
    agent._compiled.cache_clear()
    argv = agent._python_module("adapters.scripted")
    assert argv[-1] == "adapters.scripted"
    assert cached.is_file() and cached.stat().st_mtime >= source.stat().st_mtime
