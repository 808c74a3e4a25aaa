"""Helpers of the import tests: a visible skip without a sandbox, an environment built offline."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import harness
from compiler.contract import Environment
from harness.sandbox.isolation import select
from harness.sandbox.scenario_env import ENVS_DIR, READY, find_interpreter, key

VERSION = f"{sys.version_info.major}.{sys.version_info.minor}"


def require_sandbox() -> None:
    """Imports run solutions and checks in the sandbox: skip visibly without one."""
    iso = select("auto")
    if iso.name == "none":
        pytest.skip("needs the bwrap or unshare isolation (a workdir and mounts are bind mounts)")


def prebuild(project: Path, environment: Environment) -> Path:
    """The environment `assay` would build, made offline: a venv that sees this test run's pytest."""
    interpreter = find_interpreter(environment.python)
    root = project / ENVS_DIR / key(environment, interpreter)
    subprocess.run([str(interpreter.executable), "-m", "venv", str(root / "venv")], check=True, timeout=120)
    site = next((root / "venv" / "lib").glob("python3*/site-packages"))
    own = Path(pytest.__file__).resolve().parent.parent
    (site / "assay-test-run.pth").write_text(f"{own}\n{Path(harness.__file__).resolve().parents[1]}\n")
    (root / READY).write_text(json.dumps({"prebuilt_by": "tests"}), encoding="utf-8")
    return root
