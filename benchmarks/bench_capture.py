"""Capture benchmark: what the runner pays to read back a workspace the agent filled.

An agent leaves N new files (default 60,000, the hostile case of issue 13: empty files in 600
folders) beside a small seed; the runner's capture stage (`harness.trial.capture.workspace`:
one walk for the changes, unsafe edits, one `git diff` for diff.patch) is timed, then the patch
is checked with `git apply --check` on a copy of the seed. A second round gives every file a
line of content. Prints seconds per round and the patch size; the goal is <= 5 s for 60,000.
The walk the launcher makes after every command (`harness.sandbox.neutralise`) is timed apart.

Run from the project root: `nox -s perf-capture` or `python benchmarks/bench_capture.py [--files N]`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.sandbox import neutralise  # noqa: E402
from harness.trial import capture, workspace  # noqa: E402

PER_FOLDER = 100


def _seed(root: Path) -> Path:
    seed = root / "seed"
    (seed / "app").mkdir(parents=True)
    for i in range(20):
        (seed / "app" / f"mod{i:02d}.py").write_text(f"VALUE = {i}\n")
    return seed


def _fill(ws: Path, files: int, content: bytes) -> None:
    for i in range(files):
        folder = ws / "app" / "out" / f"d{i // PER_FOLDER:04d}"
        if i % PER_FOLDER == 0:
            folder.mkdir(parents=True)
        (folder / f"f{i:06d}.txt").write_bytes(content)


class Round(NamedTuple):
    wall_s: float
    cpu_s: float
    """CPU seconds of the harness and its git processes: the figure a loaded machine does not inflate."""
    neutralise_s: float
    """Wall seconds of the walk the launcher makes after every command (`neutralise`), before capture."""
    patch_bytes: int
    applies: int


def _cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def one_round(scratch: Path, files: int, content: bytes) -> Round:
    """Capture of `files` new files: wall and CPU seconds, diff.patch size, `git apply --check` exit."""
    seed = _seed(scratch)
    run_dir = scratch / "run"
    ws = workspace.create(seed, run_dir)
    workspace.commit_baseline(ws)
    _fill(ws.root, files, content)
    start = time.perf_counter()
    neutralise.neutralise(ws.root)
    walk_s = time.perf_counter() - start
    start, cpu = time.perf_counter(), _cpu()
    fields = capture.workspace(ws, ("app/**",), run_dir)
    seconds, cpu = time.perf_counter() - start, _cpu() - cpu
    assert not fields["unsafe_edits"] and not fields["diff_omitted"]
    patch = run_dir / "diff.patch"
    check = scratch / "check"
    shutil.copytree(seed, check)
    applied = subprocess.run(["git", "apply", "--check", str(patch)], cwd=check, capture_output=True)
    return Round(seconds, cpu, walk_s, patch.stat().st_size, applied.returncode)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=60_000)
    args = parser.parse_args()
    print(f"capture of {args.files:,} new files (goal: <= 5 s)")
    for label, content in (("empty", b""), ("one line each", b"hello\n")):
        scratch = Path(tempfile.mkdtemp(prefix="assay-bench-capture-"))
        try:
            done = one_round(scratch, args.files, content)
        finally:
            neutralise.remove_tree(scratch, ignore_errors=True)
        verdict = "applies" if done.applies == 0 else f"git apply --check exit {done.applies}"
        print(
            f"  {label:>14}: {done.wall_s:6.2f} s wall, {done.cpu_s:5.2f} s CPU   "
            f"diff.patch {done.patch_bytes / 1e6:5.1f} MB, {verdict}   "
            f"(the launcher's neutralise walk before it: {done.neutralise_s:.2f} s)"
        )
    print(
        f"  (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs: wall time includes waiting for a CPU)"
    )


if __name__ == "__main__":
    main()
