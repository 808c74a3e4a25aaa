"""The public API of `harness`: every name of `__all__` resolves, and importing the package is free."""

from __future__ import annotations

import subprocess
import sys

import pytest

import harness


def test_every_public_name_resolves() -> None:
    for name in harness.__all__:
        assert getattr(harness, name) is not None, name
    assert set(harness.__all__) == set(harness._PUBLIC)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_thing"):
        harness.no_such_thing  # noqa: B018


def test_import_loads_nothing_until_used() -> None:
    code = "import sys, harness; print(sorted(m for m in sys.modules if m.startswith('harness')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['harness']"
