"""`assay import` on a public dataset, end to end; prints the figures.

    python benchmarks/import_datasets.py terminal-bench DATASET --project SCRATCH [--parallel 2]

Imports DATASET into SCRATCH (an assay project: `nox -s import-datasets` makes a scratch copy of
the example project), runs `assay validate` on every imported scenario and the import's matrix
(the oracle and the no-op agent), then prints: tasks found, imported, refused (by reason, then
each task with its reasons), validate passes, oracle passes, no-op failures. Exit 1 when a figure
is wrong: a scenario that does not validate, an oracle that fails, a no-op agent that passes.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any


def assay(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`python -m harness --project PROJECT ARGS`, its output passed through."""
    cmd = [sys.executable, "-m", "harness", "--project", str(project), *args]
    print("$ assay " + " ".join(args), flush=True)
    return subprocess.run(cmd, text=True, stdout=subprocess.PIPE, check=False)


def reason_kind(reason: str) -> str:
    """A refusal reason without its particulars (what it names), to count refusals by kind."""
    text = re.sub(r"\s*\([^)]*\)", "", reason)
    text = re.sub(r"^\S+\.(py|sh|ipynb) imports \w+", "a file imports a heavy package", text)
    text = re.sub(
        r"^(the \w+(?: \w+)?) installs [\w=.,\- ]+: heavy", r"\1 installs a heavy package: heavy", text
    )
    return text.split(": ")[0]


def grades(project: Path, matrix: str) -> list[dict[str, Any]]:
    """Every trial's grade.json of the matrix, with its run.json's agent and scenario."""
    out = []
    for path in sorted((project / "runs" / matrix).rglob("grade.json")):
        run = json.loads((path.parent / "run.json").read_text(encoding="utf-8"))
        out.append(
            json.loads(path.read_text(encoding="utf-8"))
            | {"agent": run["agent"], "scenario": run["scenario"]}
        )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("format", choices=("terminal-bench", "harbor"))
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--project", type=Path, required=True)
    parser.add_argument("--name", default=None, help="dataset name (default: the folder's)")
    parser.add_argument("--parallel", type=int, default=2, help="trials, solutions, validations at once")
    args = parser.parse_args()
    name = args.name or re.sub(r"[^a-z0-9]+", "-", args.dataset.name.lower()).strip("-")
    project = args.project.resolve()
    done = assay(
        project,
        "import",
        args.format,
        str(args.dataset),
        "--name",
        name,
        "--force",
        "--jobs",
        str(args.parallel),
    )
    print(done.stdout, end="")
    if done.returncode not in (0, 1):
        return done.returncode
    data = json.loads((project / "imports" / f"{name}.json").read_text(encoding="utf-8"))
    imported: list[str] = data["imported"]
    valid = 0
    if imported:
        checked = assay(
            project, "validate", "--scenario", *imported, "--format", "json", "--jobs", str(args.parallel)
        )
        report = json.loads(checked.stdout or "{}")
        bad = {p.get("scenario") for p in report.get("problems", [])}
        valid = sum(1 for sid in imported if sid not in bad)
        assay(project, "compile")
        ran = assay(project, "matrix", name, "--parallel", str(args.parallel))
        print(ran.stdout, end="")
    trials = grades(project, name) if imported else []
    oracle = [g for g in trials if g["agent"] == "oracle"]
    noop = [g for g in trials if g["agent"] == "noop"]
    kinds = Counter(reason_kind(r["reasons"][0]) for r in data["refused"].values() if r["reasons"])
    print(
        f"\n== {args.format} dataset {args.dataset.name}"
        + (f" ({data['repo_path'] or '.'} at commit {data['commit']}" if data["commit"] else "")
        + (f", {len(data['local_changes'])} local change(s))" if data.get("local_changes") else "")
        + (")" if data["commit"] and not data.get("local_changes") else "")
    )
    print(f"tasks found:     {data['tasks']}")
    print(f"imported:        {len(imported)}")
    print(f"refused:         {len(data['refused'])}")
    for kind, count in kinds.most_common():
        print(f"  {count:>3}  {kind}")
    print(f"validate passes: {valid} of {len(imported)}")
    print(f"oracle passes:   {sum(1 for g in oracle if g.get('passed'))} of {len(oracle)}")
    print(f"no-op fails:     {sum(1 for g in noop if not g.get('passed'))} of {len(noop)}")
    for change in data.get("local_changes") or []:
        print(f"  local change: {change}")
    print("\nrefused tasks:")
    for _sid, refused in sorted(data["refused"].items()):
        print(f"  {refused['task']}: {'; '.join(refused['reasons'])}")
    wrong = (
        valid != len(imported)
        or any(not g.get("passed") for g in oracle)
        or any(g.get("passed") for g in noop)
        or len(oracle) != len(imported)
        or len(noop) != len(imported)
    )
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
