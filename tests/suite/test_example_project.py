"""The example project's own moving parts: the ruff launcher and the scripted agents' scripts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from compiler.pipeline import build
from harness.commands import _scripts

REPO = Path(__file__).resolve().parents[2]
LAUNCHER = REPO / "tools" / "bin" / "ruff"
OWN_BIN = Path(sys.executable).parent
needs_ruff = pytest.mark.skipif(
    not (OWN_BIN / "ruff").exists(), reason="ruff is not installed beside this Python"
)


def launch(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LAUNCHER), "--version"], env=env, capture_output=True, text=True, timeout=30, check=False
    )


@needs_ruff
def test_launcher_finds_ruff_through_the_shims_interpreter(tmp_path: Path) -> None:
    shim_dir = tmp_path / "shim"
    shim_dir.mkdir()
    shim = shim_dir / "ruff"
    shim.write_text(f"#!{sys.executable} -IS\nREAL = {str(LAUNCHER)!r}\n")
    shim.chmod(0o755)
    done = launch({"PATH": f"{shim_dir}:/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ruff ")


@needs_ruff
def test_launcher_uses_the_host_path() -> None:
    done = launch({"PATH": f"{LAUNCHER.parent}:/usr/bin:/bin", "BENCH_HOST_PATH": f"{OWN_BIN}:/usr/bin"})
    assert done.returncode == 0 and done.stdout.startswith("ruff ")


def test_launcher_without_ruff_exits_127_and_never_calls_itself() -> None:
    done = launch({"PATH": f"{LAUNCHER.parent}:/usr/bin:/bin", "BENCH_HOST_PATH": f"{LAUNCHER.parent}"})
    assert done.returncode == 127
    assert "not installed" in done.stderr


def test_every_scenario_is_scripted_and_prompts_never_name_the_tool() -> None:
    plan = build(REPO)
    scenarios = plan.validated.scenarios
    assert len(scenarios) >= 6
    assert {s.job.split for s in scenarios.values()} == {"train", "test"}
    assert len({s.job.family for s in scenarios.values()}) >= 2
    assert any(s.job.grader for s in scenarios.values())
    assert any(c.kind == "answer" for s in scenarios.values() for c in s.job.checks)
    links = sorted(
        {n for lv in plan.validated.levels.values() for body in lv.values() for n in body.get("links", {})}
    )
    for sid, s in scenarios.items():
        for role in _scripts.ROLES:
            path = REPO / s.job.root / _scripts.FOLDER / f"{role}.yaml"
            text = path.read_text(encoding="utf-8")
            assert yaml.safe_load(text)["steps"], path
            if text.startswith(_scripts.HEADER):  # generated: current with the scenario's files
                hints = _scripts.Hints.read(REPO / s.job.root)
                assert text == _scripts.render(s.job, REPO, role, hints, links), (
                    f"rerun `assay new scripts {sid}`"
                )
    for sid, s in scenarios.items():
        assert "ruff" not in s.job.prompt.lower(), sid
        assert s.job.negatives, sid
