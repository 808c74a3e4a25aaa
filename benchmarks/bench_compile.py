"""Compile benchmark: 500 scenarios x 15 cells x 4 agents x 5 trials (150,000 trials).

Prints: cold compile, unchanged recompile, size of generated/, and `nox -l` for a
project whose default matrix has 50 cells. Targets on a 2-core machine: < 15 s,
< 3 s, < 100 MB, < 0.5 s. Run with `nox -s perf-compile` or directly.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

PROJECT = """kind: project
spec_version: 1
name: bench
languages: [python]
factors:
  tool:
    none: { canaries: { absent: [mytool] } }
    bin: { path: [../tools/bin], trace: [mytool], forbid_words: [mytool] }
    bin+skill: { extends: bin, skill_dir: ../guides }
  knowledge:
    none: {}
    wiki: { links: { wiki: ../wiki } }
    web: { adapter: { web: true } }
  network:
    off: { network: false, canaries: { network: off } }
    on: { network: true }
constraints:
  - { when: { knowledge: web }, require: { network: on }, message: web needs the network }
control: none/none/off
"""
MATRIX = """kind: matrix
id: default
default: true
agents: [a1, a2, a3, a4]
trials: 5
max_jobs: 200000
"""
LINT = """kind: check-kind
id: lint
params:
  code: { type: string, required: true }
  max: { type: integer, default: 0 }
run: "mytool lint --select {{ code }} --format json {{ scenario.entry }}"
result: { count: { json_path: "$", max_param: max } }
"""
SCENARIO = """kind: scenario
id: {id}
family: fam-{fam}
language: python
split: {split}
entry: app/main.py
writable: ["app/**"]
checks:
  - {{ id: compiles, kind: command, run: "python -m py_compile {{{{ scenario.entry }}}}" }}
  - {{ id: lint-clean, kind: lint, with: {{ code: F401 }} }}
  - {{ id: keeps-api, kind: contains, file: app/main.py, text: ["def handler("] }}
  - {{ id: no-print, kind: absent, file: app/main.py, regex: "print\\\\(" }}
negatives:
  drops-handler: {{ fails: [keeps-api] }}
"""


def make_project(root: Path, *, scenarios: int, cells50: bool = False) -> None:
    """Write a synthetic project."""
    (root / "specs/agents").mkdir(parents=True)
    (root / "specs/checks").mkdir()
    (root / "specs/matrices").mkdir()
    if cells50:
        levels_a = "\n".join(f"    a{i}: {{}}" for i in range(10))
        levels_b = "\n".join(f"    b{i}: {{}}" for i in range(5))
        project = (
            f"kind: project\nspec_version: 1\nname: wide\nlanguages: [python]\nfactors:\n  fa:\n{levels_a}\n  fb:\n{levels_b}\n"
            "control: a0/b0\n"
        )
        (root / "specs/project.yaml").write_text(project)
    else:
        (root / "specs/project.yaml").write_text(PROJECT)
    for i in range(1, 5):
        (root / f"specs/agents/a{i}.yaml").write_text(
            f"kind: agent\nid: a{i}\nadapter: scripted\nargs: {{ script: scripts/s{i}.yaml }}\n"
        )
        (root / "scripts").mkdir(exist_ok=True)
        (root / f"scripts/s{i}.yaml").write_text("steps:\n  - run: python -m py_compile app/main.py\n")
    if not cells50:  # the folders the project's factor levels provide
        (root / "tools/bin").mkdir(parents=True)
        (root / "tools/bin/mytool").write_text("#!/bin/sh\nexit 0\n")
        (root / "tools/bin/mytool").chmod(0o755)
        for folder in ("guides", "wiki"):
            (root / folder).mkdir()
            (root / folder / "README.md").write_text(f"The {folder} of the benchmark's tool.\n")
    (root / "specs/checks/lint.yaml").write_text(LINT)
    (root / "specs/matrices/default.yaml").write_text(MATRIX)
    for n in range(scenarios):
        sid = f"s{n:04d}"
        d = root / "scenarios" / sid
        for sub in ("seed/app", "reference/app", "negatives/drops-handler/app"):
            (d / sub).mkdir(parents=True)
        (d / "scenario.yaml").write_text(
            SCENARIO.format(id=sid, fam=n // 5, split="test" if (n // 5) % 4 == 0 else "train")
        )
        (d / "prompt.md").write_text(
            f"Task {n}: the handler in app/main.py prints debug output; remove it, keep the API.\n"
        )
        (d / "seed/app/main.py").write_text(f"import os\n\ndef handler():\n    print({n})\n    return {n}\n")
        (d / "reference/app/main.py").write_text(f"def handler():\n    return {n}\n")
        (d / "negatives/drops-handler/app/main.py").write_text(f"def other():\n    return {n}\n")


def _run(cmd: list[str], cwd: Path) -> float:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True, env=env, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scenarios", type=int, default=500)
    parser.add_argument("--keep", action="store_true", help="keep the temp project and print its path")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="assay-bench-"))
    try:
        big = tmp / "big"
        make_project(big, scenarios=args.scenarios)
        assay = [sys.executable, "-m", "harness", "--project", str(big), "compile"]
        cold = _run(assay, REPO)
        warm = _run(assay, REPO)
        size = _size(big / "generated")
        files = sum(1 for _ in (big / "generated").rglob("*.json"))
        from compiler.contract import load_manifest

        jobs = sum(m.jobs for m in load_manifest(big / "generated").matrices.values())
        cells = len(load_manifest(big / "generated").matrices["default"].cells)

        wide = tmp / "wide"
        make_project(wide, scenarios=2, cells50=True)
        shutil.copy(REPO / "noxfile.py", wide / "noxfile.py")
        shutil.copytree(REPO / "noxsupport", wide / "noxsupport")
        for pkg in ("compiler", "harness", "adapters"):
            (wide / pkg).symlink_to(REPO / pkg)
        nox = [sys.executable, "-m", "nox", "-l"]
        _run(nox, wide)  # compiles on demand
        listed = subprocess.run(nox, cwd=wide, capture_output=True, text=True, check=True).stdout
        bench_sessions = sum(
            1 for line in listed.splitlines() if line.startswith("- bench-") and "-> Run cell" in line
        )
        nox_l = statistics.median(_run(nox, wide) for _ in range(5))
        nox_start = statistics.median(
            _run([sys.executable, "-c", "import nox.__main__"], wide) for _ in range(5)
        )
        print(f"suite: {args.scenarios} scenarios x {cells} cells x 4 agents x 5 trials = {jobs} trials")
        print(f"cold compile:        {cold:6.2f} s   (target < 15 s)")
        print(f"unchanged recompile: {warm:6.2f} s   (target < 3 s)")
        print(f"generated/ size:     {size / 1e6:6.1f} MB  in {files} files (target < 100 MB)")
        print(
            f"nox -l, {bench_sessions} bench cells: {nox_l:6.3f} s   (median of 5, target < 0.5 s;"
            f" of it nox's own start-up {nox_start:.3f} s, the noxfile {max(nox_l - nox_start, 0):.3f} s)"
        )
        ok = cold < 15 and warm < 3 and size < 100e6 and nox_l < 0.5
        print("all targets met" if ok else "TARGET MISSED")
        return 0 if ok else 1
    finally:
        if args.keep:
            print(f"kept: {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    sys.exit(main())
