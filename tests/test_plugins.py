"""The one plugin loader (`harness.plugins`), as every plugin point uses it."""

from __future__ import annotations

import pkgutil

import pytest

import adapters
from compiler.load import builtin_adapters
from harness.batch.executor import EXECUTORS
from harness.checks.base import CheckError
from harness.checks.registry import CHECK_KINDS
from harness.errors import UsageError
from harness.plugins import Plugins
from harness.sandbox.isolation import ISOLATIONS
from harness.trial.agent import ADAPTERS

POINT = Plugins("widget", {"plain": "pathlib:PurePosixPath"}, also=("auto",))


def test_short_name_and_both_dotted_forms_load() -> None:
    import pathlib

    assert POINT.load("plain") is pathlib.PurePosixPath
    assert POINT.load("pathlib:PureWindowsPath") is pathlib.PureWindowsPath
    assert POINT.load("pathlib.Path") is pathlib.Path


def test_an_unknown_name_lists_the_valid_ones_and_a_broken_path_is_named() -> None:
    with pytest.raises(UsageError, match=r"unknown widget 'plane'; valid: auto, plain, or a dotted path"):
        POINT.load("plane")
    with pytest.raises(UsageError, match=r"cannot load widget 'pathlib:Nope' from 'pathlib:Nope'"):
        POINT.load("pathlib:Nope")
    with pytest.raises(UsageError, match=r"cannot load widget 'no_such_pkg\.mod'"):
        POINT.load("no_such_pkg.mod")


def test_every_plugin_point_uses_it() -> None:
    with pytest.raises(CheckError, match=r"unknown check kind 'contain'; valid: .*contains"):
        CHECK_KINDS.load("contain")
    with pytest.raises(UsageError, match="unknown isolation 'bwarp'; valid: auto, bwrap, none, unshare"):
        ISOLATIONS.load("bwarp")
    with pytest.raises(UsageError, match="unknown executor 'dusk'; valid: dask, local"):
        EXECUTORS.load("dusk")
    with pytest.raises(
        UsageError, match="unknown adapter 'claude'; valid: aider, claude_code, codex, command"
    ):
        ADAPTERS.target("claude")
    assert (ADAPTERS.target("claude_code"), ADAPTERS.target("mypkg.agent")) == (
        "adapters.claude_code",
        "mypkg.agent",
    )
    assert CHECK_KINDS.load("contains").__name__ == "ContainsCheck"


def test_the_builtin_adapters_are_listed_once_for_runner_installer_and_compiler() -> None:
    """`adapters.__all__` is every module of the package but its library; the compiler reads the
    same list from the source without importing it."""
    library = {"install", "schema"}
    modules = {m.name for m in pkgutil.iter_modules(adapters.__path__) if not m.name.startswith("_")}
    assert set(adapters.__all__) == modules - library
    assert builtin_adapters() == tuple(adapters.__all__)
    assert ADAPTERS.names() == sorted([*adapters.__all__, "command"])
