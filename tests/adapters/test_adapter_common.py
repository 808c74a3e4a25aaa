"""The adapters' shared machinery, without any agent CLI (fast; default test run)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from adapters._cli import launch_argv, run_cli
from adapters._common import AdapterError, AgentArgs, agent_env, find_cli, read_bench
from adapters._outputs import install_skills
from adapters.install import Package
from adapters.schema import AgentInfo
from tests.adapters.helpers import ROOT


def bench_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        "BENCH_RUN_DIR": str(tmp_path / "run"),
        "BENCH_KNOWLEDGE": "web",
        "BENCH_TOOL": "bin",
        "BENCH_CELL": "bin/web/off",
        "BENCH_TRIAL": "1",
        "BENCH_HOST_PATH": "/usr/bin:/bin",
        **extra,
    }


def test_read_bench_levels_args_and_web(tmp_path: Path) -> None:
    env = bench_env(
        tmp_path,
        BENCH_AGENT_ARGS='{"model": "m1", "web": false}',
        BENCH_MCP_SERVERS='{"docs": {"command": ["srv", "--stdio"]}}',
    )
    bench = read_bench(env, prompt="do it")
    assert bench.levels == {"knowledge": "web", "tool": "bin"}  # runner bookkeeping is not a factor
    args = bench.args(AgentArgs)
    assert (args.model, bench.web(args)) == ("m1", False)
    assert bench.web(AgentArgs()) is True  # BENCH_KNOWLEDGE=web
    assert bench.mcp_servers(args)["docs"].command == ["srv", "--stdio"]
    with pytest.raises(AdapterError, match="BENCH_AGENT_ARGS"):
        read_bench({**env, "BENCH_AGENT_ARGS": '{"modle": "typo"}'}, prompt="").args(AgentArgs)
    with pytest.raises(AdapterError, match="not JSON"):
        read_bench({**env, "BENCH_AGENT_ARGS": "{"}, prompt="")


def test_agent_env_drops_the_contract_and_isolates_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BENCH_AGENT_ARGS", "{}")
    bench = read_bench(bench_env(tmp_path), prompt="")
    env = agent_env(bench, tmp_path / "home", {"HOME": "/ignored", "X": "1"})
    assert not [k for k in env if k.startswith("BENCH_")]
    assert (env["HOME"], env["XDG_CONFIG_HOME"], env["X"]) == (
        "/ignored",
        str(tmp_path / "home/.config"),
        "1",
    )


def test_find_cli_prefers_args_then_newest_cached_version(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    for version in ("1.2.0", "1.10.0"):
        binary = cache / f"scope-tool-{version}" / "node_modules" / ".bin" / "tool"
        binary.parent.mkdir(parents=True)
        binary.write_text("#!/bin/sh\n")
    bench = read_bench(bench_env(tmp_path, BENCH_AGENT_CACHE=str(cache)), prompt="")
    tool = Package("npm", "@scope/tool", "1.2.0", "tool")
    assert "1.10.0" in str(find_cli(bench, AgentArgs(), tool))
    assert "1.2.0" in str(find_cli(bench, AgentArgs(version="1.2.0"), tool))
    assert find_cli(bench, AgentArgs(bin="/x/tool"), tool) == Path("/x/tool")
    with pytest.raises(AdapterError, match="not found"):
        find_cli(bench, AgentArgs(), Package("npm", "other", "1", "other-cli"))


def test_install_skills_keeps_skills_and_wraps_plain_guides(tmp_path: Path) -> None:
    skills = tmp_path / "skills"
    (skills / "lint").mkdir(parents=True)
    (skills / "lint" / "SKILL.md").write_text("---\nname: lint\n---\nRun the linter.\n")
    loaded = install_skills(skills, tmp_path / "dest")
    assert [i.name for i in loaded] == ["lint"]
    assert (tmp_path / "dest" / "lint" / "SKILL.md").read_text().endswith("Run the linter.\n")
    guide = tmp_path / "guide"
    guide.mkdir()
    (guide / "usage.md").write_text("Use it.\n")
    (item,) = install_skills(guide, tmp_path / "dest2")
    skill = (tmp_path / "dest2" / "guide" / "SKILL.md").read_text()
    assert item.name == "guide" and "name: guide" in skill and "usage.md" in skill


def test_launch_argv_runs_venv_scripts_through_their_python(tmp_path: Path) -> None:
    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python").symlink_to(sys.executable)
    script = bin_dir / "tool"
    script.write_text("#!/somewhere/else/python3\nprint('x')\n")
    native = bin_dir / "native"
    native.write_bytes(b"\x7fELF....")
    assert launch_argv(script) == [str(bin_dir / "python"), str(script)]
    assert launch_argv(native) == [str(native)]


def test_run_cli_stops_a_cli_retrying_past_its_limit_and_kills_the_whole_tree(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    # `wait $!`: should the shell outlive its killed child for a moment, it still exits non-zero
    script = f"sleep 60 & echo $! > {pid_file}; echo 'Retrying in 1 seconds'; echo again >&2; wait $!"
    begin = time.monotonic()
    done = run_cli(
        ["sh", "-c", script],
        env=dict(os.environ),
        cwd=tmp_path,
        stdin="ignored\n",
        log_dir=tmp_path,
        name="cli",
        retry_line=re.compile("^Retrying|^again"),
        max_retries=1,
    )
    assert time.monotonic() - begin < 30
    assert done.returncode != 0
    assert (done.retries, done.stopped) == (2, True)
    assert [line for _, line in done.lines] == ["Retrying in 1 seconds"]
    # The CLI's own line is kept; a shell that sees its job die before it is killed itself may add
    # "Killed" (the tree's processes die in no fixed order), which is the shell's, not a retry.
    assert (tmp_path / "cli.stderr").read_text().splitlines()[0] == "again"
    grandchild = int(pid_file.read_text())
    for _ in range(50):
        if (
            not Path(f"/proc/{grandchild}").exists()
            or "Z" in Path(f"/proc/{grandchild}/stat").read_text().split()[2]
        ):
            break
        time.sleep(0.1)
    else:
        pytest.fail("the grandchild survived")


def run_module(
    name: str, tmp_path: Path, args: dict[str, object], **env: str
) -> subprocess.CompletedProcess[str]:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    full = {
        **{k: v for k, v in os.environ.items() if not k.startswith("BENCH_")},
        "PYTHONPATH": str(ROOT),
        **bench_env(tmp_path),
        "BENCH_AGENT_ARGS": json.dumps(args),
        **env,
    }
    return subprocess.run(
        [sys.executable, "-m", f"adapters.{name}"],
        input="task",
        text=True,
        cwd=workspace,
        env=full,
        capture_output=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    "name", ["claude_code", "codex", "mini_swe_agent", "aider", "gemini_cli", "opencode"]
)
def test_missing_api_key_is_an_infrastructure_failure(name: str, tmp_path: Path) -> None:
    done = run_module(name, tmp_path, {"bin": "/bin/true", "api_key_env": "ASSAY_NO_SUCH_KEY"})
    assert done.returncode == 75, done.stderr
    info = AgentInfo.model_validate_json((tmp_path / "run" / "agent.json").read_text())
    assert "ASSAY_NO_SUCH_KEY" in (info.infra_failure or "")


@pytest.mark.parametrize(
    "name", ["claude_code", "codex", "mini_swe_agent", "aider", "gemini_cli", "opencode"]
)
def test_bad_arguments_exit_2(name: str, tmp_path: Path) -> None:
    done = run_module(name, tmp_path, {"no_such_key": 1})
    assert done.returncode == 2
    assert "no_such_key" in done.stderr


def test_agents_without_mcp_refuse_mcp_servers(tmp_path: Path) -> None:
    servers = json.dumps({"docs": {"command": ["srv"]}})
    for name in ("aider", "mini_swe_agent"):
        done = run_module(name, tmp_path, {"bin": "/bin/true"}, BENCH_MCP_SERVERS=servers)
        assert done.returncode == 2 and "MCP" in done.stderr


def test_shared_run_stops_a_cli_that_keeps_retrying_and_removes_its_caches(tmp_path: Path) -> None:
    """The run every CLI adapter shares, with a stand-in CLI: aider's retry notices past
    max_retries stop it (exit 75, the reason in agent.json) and its `.aider*` caches go."""
    fake = tmp_path / "aider"
    fake.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = --version ]; then echo "aider 9.9.9"; exit 0; fi\n'
        "mkdir .aider.tags.cache.v4; touch kept.txt\n"
        'while true; do echo "Retrying in 0.5 seconds..."; sleep 0.1; done\n'
    )
    fake.chmod(0o755)
    done = run_module("aider", tmp_path, {"bin": str(fake), "max_retries": 2})
    assert done.returncode == 75, done.stderr
    info = AgentInfo.model_validate_json((tmp_path / "run" / "agent.json").read_text())
    # stopped on the third notice (the stand-in never ends by itself); more may be in the pipe by then
    found = re.match(r"provider kept failing after (\d+) retries", info.infra_failure or "")
    assert found and int(found[1]) >= 3
    assert (info.agent, info.version, info.binary) == ("aider", "9.9.9", str(fake))
    assert sorted(p.name for p in (tmp_path / "ws").iterdir()) == ["kept.txt"]
    assert (tmp_path / "run" / "aider.stdout").read_text().count("Retrying") == int(found[1])
