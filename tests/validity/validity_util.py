"""Running the real `assay validate` CLI on a project folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

REPO = Path(__file__).resolve().parents[2]


class Ran(NamedTuple):
    code: int
    out: str
    err: str


def assay_validate(project: Path, *args: str) -> Ran:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "harness", "--project", str(project), "validate", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return Ran(done.returncode, done.stdout, done.stderr)
