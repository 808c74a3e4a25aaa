"""The network stays closed: each CLI, in a namespace with only loopback, contacts nothing but
the scripted model server (a DNS sinkhole and :80/:443 listeners record every attempt)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.adapters import (
    test_adapter_aider,
    test_adapter_claude_code,
    test_adapter_codex,
    test_adapter_gemini_cli,
    test_adapter_mini_swe_agent,
    test_adapter_opencode,
)
from tests.adapters.helpers import require_cli

pytestmark = pytest.mark.agents
HERE = Path(__file__).resolve().parent

CASES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "claude_code": (test_adapter_claude_code.WRITE_THEN_BASH, {}),
    "codex": (test_adapter_codex.SCRIPT, {}),
    "mini_swe_agent": (test_adapter_mini_swe_agent.SCRIPT, {}),
    "aider": (test_adapter_aider.SCRIPT, {"files": ["app.py"]}),
    "gemini_cli": (test_adapter_gemini_cli.SCRIPT, {}),
    "opencode": (test_adapter_opencode.SCRIPT, {}),
}


def _netns_ok() -> bool:
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return False
    probe = subprocess.run(["unshare", "--net", "--mount", "true"], capture_output=True)
    return probe.returncode == 0


def run_in_netns(adapter: str, workspace: Path, tmp_path: Path, **extra: Any) -> dict[str, Any]:
    script, args = CASES[adapter]
    require_cli(adapter)
    if not _netns_ok():
        pytest.skip("unshare --net --mount is not permitted here (needs root or user namespaces)")
    spec = {
        "adapter": adapter,
        "script": script,
        "args": {"max_retries": 0, **args},
        "workspace": str(workspace),
        "run_dir": str(tmp_path / "run"),
        "out": str(tmp_path / "net.json"),
        "prompt": "Create hello.txt containing hi and make greet return hi.",
        **extra,
    }
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    done = subprocess.run(
        [
            "unshare",
            "--net",
            "--mount",
            sys.executable,
            str(HERE / "netcheck.py"),
            str(tmp_path / "spec.json"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads((tmp_path / "net.json").read_text())
    return result


def test_recorders_see_lookups_and_connections(workspace: Path, tmp_path: Path) -> None:
    result = run_in_netns("claude_code", workspace, tmp_path, probe="canary.assay.test")
    assert result["dns"][:1] == ["canary.assay.test"]
    assert result["connections"][0].startswith("443")


def test_claude_without_the_traffic_switch_is_caught(workspace: Path, tmp_path: Path) -> None:
    """Negative control: with CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC unset, the recorders see
    Claude Code reach for its vendor's hosts (answered by the sinkhole, never leaving the box)."""
    result = run_in_netns(
        "claude_code",
        workspace,
        tmp_path,
        linger=3,
        args={"max_retries": 0, "env": {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": ""}},
    )
    assert result["dns"] or result["connections"]


@pytest.mark.parametrize("adapter", sorted(CASES))
def test_nothing_but_the_model_server_is_contacted(adapter: str, workspace: Path, tmp_path: Path) -> None:
    result = run_in_netns(adapter, workspace, tmp_path, linger=1)
    assert result["returncode"] == 0, result["stderr"]
    assert (workspace / "hello.txt").read_text().strip() == "hi"
    assert [r for r in result["records"] if r["kind"] == "main"]
    assert result["dns"] == []
    assert result["connections"] == []
