"""`assay import terminal-bench|harbor <task or dataset folder>`: run the suites people already have.

Each task becomes a scenario (see docs/importing.md); a task that cannot be reproduced here is
refused with its reason. Writes `scenarios/<id>/`, `specs/matrices/<name>.yaml`, and the import
report `imports/<name>.md` / `.json`. Exit 0 when at least one task was imported, 1 when every
task was refused, 2 on a usage error, 3 when the folder holds no task of the format.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

HELP = "import Terminal-Bench or Harbor tasks as scenarios (refused tasks listed with reasons)"


def configure(parser: argparse.ArgumentParser) -> None:
    """Arguments of `assay import`."""
    parser.add_argument("format", choices=("terminal-bench", "harbor"), help="the tasks' format")
    parser.add_argument("path", type=Path, help="a task folder, or a dataset folder holding tasks")
    parser.add_argument(
        "--name", default=None, help="dataset name: matrix id, tag, family, id prefix (default: the folder's)"
    )
    parser.add_argument("--force", action="store_true", help="replace scenario folders that exist already")
    parser.add_argument("--jobs", "-j", type=int, default=2, help="solutions run at once (default 2)")


def _compile_and_validate(imp: object, ids: list[str], jobs: int, matrix: Path) -> None:
    """Compile the project, refusing imported scenarios the compiler rejects; then validate them."""
    from compiler.errors import SpecErrors
    from compiler.pipeline import build
    from harness.commands._importing import Importer
    from harness.validity import validate

    assert isinstance(imp, Importer)
    live = list(ids)
    while True:
        try:
            plan = build(imp.project)
            break
        except SpecErrors as exc:
            mine = {sid: [e for e in exc.errors if e.file.startswith(f"scenarios/{sid}/")] for sid in live}
            hit = {sid: errs for sid, errs in mine.items() if errs}
            if not hit:
                raise
            for sid, errs in hit.items():
                imp.refuse(
                    sid, "the compiler rejects it: " + "; ".join(e.text().splitlines()[0] for e in errs[:3])
                )
                live.remove(sid)
            if not live:
                matrix.unlink(missing_ok=True)  # it would select nothing
                return
    scenarios = [plan.validated.scenarios[sid].job for sid in live if sid in plan.validated.scenarios]
    if not scenarios:
        return
    report = validate(scenarios, imp.project, jobs=jobs)
    for problem in report.problems:
        imp.refuse(problem.scenario, f"assay validate: {problem.line()}")
    for sid in live:
        if not imp.outcomes[sid].reasons:
            imp.outcomes[sid].imported = True
    if any(o.reasons for o in imp.outcomes.values() if o.scenario in live):
        build(imp.project)  # what stays must still compile


def execute(args: argparse.Namespace) -> int:
    """Import, then print the report's summary."""
    from compiler.errors import SpecErrors, render
    from harness.commands._importing import (
        REPORTS,
        Importer,
        default_name,
        own_matrix,
        parallel,
        report,
        stderr,
        write_specs,
    )
    from harness.errors import NothingSelected, UsageError
    from harness.importers.reference import SolutionFailed
    from harness.importers.task import slug
    from harness.importers.write import solution_job
    from harness.sandbox.scenario_env import CannotRunHere

    project = Path(args.project).resolve()
    source = args.path.resolve()
    if not source.is_dir():
        raise UsageError(f"{args.path} is not a folder")
    if not (project / "specs").is_dir():
        raise UsageError(
            f"{project} holds no specs/: import into an assay project (assay --project DIR import ...)"
        )
    name = slug(args.name) if args.name else default_name(args.format, source)
    theirs = own_matrix(project, name)
    if theirs is not None:
        raise UsageError(
            f"{theirs.relative_to(project)} is the project's own matrix, not one an import wrote: "
            "import under another --name"
        )
    earlier = project / "specs" / "matrices" / f"{name}.yaml"
    before = earlier.read_bytes() if earlier.is_file() else None  # an import bringing nothing puts it back
    started = time.time()
    imp = Importer(project, args.format, source, name, force=args.force, jobs=args.jobs)
    tasks = imp.read()
    if not tasks:
        raise NothingSelected(f"no {args.format} task under {args.path}")
    staging = project / ".cache" / "import" / name
    shutil.rmtree(staging, ignore_errors=True)
    staged = {t.id: (t, folder) for t in tasks if (folder := imp.stage(t, staging)) is not None}
    stderr(
        f"assay: {len(tasks)} task(s), {len(staged)} to reproduce, {len(tasks) - len(staged)} refused as read"
    )

    def reproduce(sid: str) -> None:
        task, folder = staged[sid]
        try:
            imp.reference(task, folder, solution_job(folder, project))
        except (SolutionFailed, CannotRunHere) as exc:
            imp.outcomes[sid].reasons.append(str(exc))

    parallel(sorted(staged), reproduce, args.jobs)
    kept = []
    for sid, (_task, folder) in sorted(staged.items()):
        if imp.outcomes[sid].reasons:
            continue
        dest = project / "scenarios" / sid
        if dest.exists():
            shutil.rmtree(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(folder), dest)
        kept.append(sid)
    shutil.rmtree(staging, ignore_errors=True)
    control = _control(project)
    timeout = max((t.timeout_s or 600.0) for t, _ in staged.values()) if staged else 600.0
    matrix = write_specs(project, name, control, timeout)
    if kept:
        try:
            _compile_and_validate(imp, kept, args.jobs, matrix)
        except SpecErrors as exc:  # errors of the project's own specs: the import cannot judge its tasks
            print(render(exc.errors), file=sys.stderr)
            stderr("assay: the project does not compile (the errors above are not in imported scenarios)")
            return 2
    reports = project / REPORTS / f"{name}.json"
    brought = any(o.imported for o in imp.outcomes.values())
    data = report(imp, started, write=brought or not reports.exists())
    if not data["imported"]:
        if before is not None:
            matrix.write_bytes(before)  # an earlier import's matrix still runs its scenarios
        else:
            matrix.unlink(missing_ok=True)
    stderr(
        f"assay: imported {len(data['imported'])} of {data['tasks']} task(s) into scenarios/ "
        f"(matrix {name}); refused {len(data['refused'])}: see imports/{name}.md"
    )
    for sid, refused in sorted(data["refused"].items()):
        stderr(f"  refused {sid}: {refused['reasons'][0] if refused['reasons'] else '?'}")
    return 0 if data["imported"] else 1


def _control(project: Path) -> str:
    import yaml

    from harness.errors import UsageError

    for path in sorted((project / "specs").rglob("*.y*ml")):
        try:
            doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError):
            continue
        if isinstance(doc, dict) and doc.get("kind") == "project" and isinstance(doc.get("control"), str):
            return str(doc["control"])
    raise UsageError(
        "the project spec names no `control:` cell; the import's matrix runs in the control cell"
    )
