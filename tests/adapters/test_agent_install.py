"""Agent CLI installation into the cache: the packages the adapters declare, installed where the
adapters look for them."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from adapters import claude_code
from adapters._common import AgentArgs, find_cli, read_bench
from adapters.install import InstallError, dir_name, install, known, package_for
from adapters.install import main as install_main
from tests.adapters.helpers import agent_cache

CLI_ADAPTERS = ["aider", "claude_code", "codex", "gemini_cli", "mini_swe_agent", "opencode"]


def test_each_cli_adapter_declares_its_pinned_package() -> None:
    assert sorted(known()) == CLI_ADAPTERS
    assert known()["claude_code"] == claude_code.PACKAGE == claude_code.ADAPTER.cli.package
    assert all(p.version and p.bin for p in known().values())
    assert dir_name("@anthropic-ai/claude-code", "2.1.197") == "anthropic-ai-claude-code-2.1.197"


def test_package_for_defaults_and_overrides() -> None:
    assert package_for("claude_code", {}) == claude_code.PACKAGE
    custom = package_for("aider", {"version": "0.80.0"})
    assert (custom.manager, custom.name, custom.version, custom.bin) == (
        "pip",
        "aider-chat",
        "0.80.0",
        "aider",
    )
    other = package_for("command", {"package": "@x/y", "version": "1", "installer": "npm", "bin_name": "y"})
    assert (other.name, other.bin) == ("@x/y", "y")


def test_unknown_or_unpinned_packages_are_refused(tmp_path: Path) -> None:
    with pytest.raises(InstallError, match="known: aider, claude_code"):
        package_for("nope", {})
    with pytest.raises(InstallError, match="npm or pip"):
        package_for("codex", {"installer": "cargo"})
    with pytest.raises(InstallError, match="pin a version"):
        install(package_for("command", {"package": "x", "version": ""}), tmp_path)


@pytest.mark.parametrize("adapter", CLI_ADAPTERS)
def test_adapters_find_their_cli_where_install_puts_it(adapter: str, tmp_path: Path) -> None:
    pkg = known()[adapter]
    folder = tmp_path / dir_name(pkg.name, pkg.version)
    binary = folder / ("node_modules/.bin" if pkg.manager == "npm" else "venv/bin") / pkg.bin
    binary.parent.mkdir(parents=True)
    binary.write_text("#!/bin/sh\n")
    bench = read_bench(
        {"BENCH_RUN_DIR": str(tmp_path / "run"), "BENCH_AGENT_CACHE": str(tmp_path)}, prompt=""
    )
    assert find_cli(bench, AgentArgs(), pkg) == binary


def test_the_installer_takes_names_or_all_never_both_nor_neither(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in ([], ["--all", "codex"], ["--all", "--version", "1.0"]):
        with pytest.raises(SystemExit) as stop:
            install_main(argv)
        assert stop.value.code == 2
    assert "name the adapters to install, or --all" in capsys.readouterr().err


@pytest.mark.agents
@pytest.mark.parametrize("adapter", CLI_ADAPTERS)  # `nox -s agents` installs them all (--all)
def test_installed_once_and_version_reported(adapter: str) -> None:
    pkg = known()[adapter]
    if not (agent_cache() / dir_name(pkg.name, pkg.version) / "installed.json").is_file():
        pytest.skip(f"{pkg.name} not installed in {agent_cache()} (run `nox -s agents`)")
    begin = time.monotonic()
    done = install(pkg, agent_cache())
    assert time.monotonic() - begin < 5  # cached: no second install
    assert done.installed_version == pkg.version
    assert Path(done.bin).exists()
