"""`assay import terminal-bench|harbor <task or dataset folder>`: run the suites people already have.

Each task becomes a scenario (see docs/importing.md); a task that cannot be reproduced here is
refused with its reason. Writes `scenarios/<id>/`, `specs/matrices/<name>.yaml`, and the import
report `imports/<name>.md` / `.json`. Exit 0 when at least one task was imported, 1 when every
task was refused, 2 on a usage error, 3 when the folder holds no task of the format, 130 when
interrupted (Ctrl-C, SIGTERM, SIGHUP). An import that does not finish, whatever stopped it, takes
back everything it wrote (`harness.importers.undo`): the project is as it was before it.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path
from typing import Any

HELP = "import Terminal-Bench or Harbor tasks as scenarios (refused tasks listed with reasons)"
INTERRUPTED = "nothing of the import was kept: the project is as it was before it"
"""What an import that did not finish left (harness.cli says it after `assay: interrupted`)."""


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
    """Import, then print the report's summary; an import that does not finish keeps nothing."""
    from compiler.errors import SpecErrors, render
    from harness.commands._importing import Importer, default_name, own_matrix, stderr
    from harness.errors import IO_ERRNOS, NothingSelected, TreeUnwritable, UsageError, io_detail
    from harness.importers.task import slug

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
    control = _control(project)
    started = time.time()
    imp = Importer(project, args.format, source, name, force=args.force, jobs=args.jobs)
    if imp.undo.attic.exists() or imp.undo.attic.is_symlink():
        raise UsageError(
            f"{imp.undo.attic.relative_to(project)}/ holds what an import of {name} that did not "
            "finish moved aside (the project's files as they were before it, at their paths): put "
            "back what you need, remove the folder, then import again"
        )
    tasks = imp.read()
    if not tasks:
        raise NothingSelected(f"no {args.format} task under {args.path}")
    try:
        code = _bring_in(imp, tasks, control, started)
        imp.undo.commit()
    except SpecErrors as exc:  # errors of the project's own specs: the import cannot judge its tasks
        imp.undo.rollback()
        print(render(exc.errors), file=sys.stderr)
        stderr(
            "assay: the project does not compile (the errors above are not in imported scenarios); "
            + INTERRUPTED
        )
        return 2
    except BaseException as exc:  # Ctrl-C, SIGTERM (harness.cli), a full disk, a bug: nothing half-imported
        imp.undo.rollback()
        if isinstance(exc, OSError) and exc.errno in IO_ERRNOS:
            raise TreeUnwritable(f"{io_detail(exc, project)}; {INTERRUPTED}") from exc
        if not isinstance(exc, KeyboardInterrupt):  # harness.cli adds INTERRUPTED to that one
            exc.add_note(f"assay import: {INTERRUPTED}")
        raise
    return code


def _bring_in(imp: object, tasks: list[Any], control: str, started: float) -> int:
    """Stage, reproduce, move into scenarios/, compile, validate, report; every path it writes is
    claimed in `imp.undo` first. Returns the exit code."""
    from harness.commands._importing import REPORTS, Importer, parallel, report, stderr, write_specs
    from harness.importers.reference import SolutionFailed
    from harness.importers.write import solution_job
    from harness.sandbox.scenario_env import CannotRunHere

    assert isinstance(imp, Importer)
    project, name, undo = imp.project, imp.name, imp.undo
    staging = undo.claim(imp.staging)
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

    parallel(sorted(staged), reproduce, imp.jobs, stop=imp.stop)
    kept = []
    for sid, (_task, folder) in sorted(staged.items()):
        if imp.outcomes[sid].reasons:
            continue
        dest = undo.claim(project / "scenarios" / sid)  # --force: the folder there waits in the attic
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(folder, dest)
        kept.append(sid)
    shutil.rmtree(staging, ignore_errors=True)
    timeout = max((t.timeout_s or 600.0) for t, _ in staged.values()) if staged else 600.0
    matrix = write_specs(project, name, control, timeout, claim=undo.claim)
    if kept:
        _compile_and_validate(imp, kept, imp.jobs, matrix)
    reports = project / REPORTS / f"{name}.json"
    brought = any(o.imported for o in imp.outcomes.values())
    data = report(imp, started, write=brought or not reports.exists())
    if not data["imported"]:
        undo.restore(matrix)  # an earlier import's matrix still runs its scenarios; no matrix without one
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
