"""Agent CLI installation into the cache."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from harness.agent_install import KNOWN, InstallError, dir_name, install, package_for
from tests.adapters.helpers import agent_cache


def test_package_for_defaults_and_overrides() -> None:
    assert package_for("claude_code", {}) == KNOWN["claude_code"]
    custom = package_for("aider", {"version": "0.80.0"})
    assert (custom.manager, custom.package, custom.version, custom.bin) == (
        "pip",
        "aider-chat",
        "0.80.0",
        "aider",
    )
    other = package_for("command", {"package": "@x/y", "version": "1", "installer": "npm", "bin_name": "y"})
    assert (other.package, other.bin) == ("@x/y", "y")


def test_unknown_or_unpinned_packages_are_refused(tmp_path: Path) -> None:
    with pytest.raises(InstallError, match="known: aider"):
        package_for("nope", {})
    with pytest.raises(InstallError, match="npm or pip"):
        package_for("codex", {"installer": "cargo"})
    with pytest.raises(InstallError, match="pin a version"):
        install(package_for("command", {"package": "x", "version": ""}), tmp_path)


def test_cache_folder_names_match_the_adapters_lookup() -> None:
    from adapters._common import cache_dir_name

    for pkg in KNOWN.values():
        assert dir_name(pkg.package, pkg.version) == cache_dir_name(pkg.package, pkg.version)
    assert dir_name("@anthropic-ai/claude-code", "2.1.197") == "anthropic-ai-claude-code-2.1.197"


@pytest.mark.agents
@pytest.mark.parametrize("adapter", ["claude_code", "codex", "mini_swe_agent", "aider"])
def test_installed_once_and_version_reported(adapter: str) -> None:
    pkg = KNOWN[adapter]
    if not (agent_cache() / dir_name(pkg.package, pkg.version) / "installed.json").is_file():
        pytest.skip(f"{pkg.package} not installed in {agent_cache()} (run `nox -s agents`)")
    begin = time.monotonic()
    done = install(pkg, agent_cache())
    assert time.monotonic() - begin < 5  # cached: no second install
    assert done.installed_version == pkg.version
    assert Path(done.bin).exists()
