"""`assay grade <run-dir|tree> [--regrade]`: grade runs from their preserved artifacts only.

Exit codes: 0 every graded run passed; 1 a run failed, failed to run, or is ungradeable;
2 usage error (a generated/ that is damaged or older than the specs included); 3 no run found;
74 the tree cannot be written (full disk, read-only); 130 interrupted.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

HELP = "grade stored runs (no agent is started; --regrade after a grader or check change)"
INTERRUPTED = "the grades written before it are kept (each is written whole); rerun to grade the rest"


def configure(parser: argparse.ArgumentParser) -> None:
    """Arguments of `assay grade`."""
    parser.add_argument("target", type=Path, help="a run directory or a tree of them")
    parser.add_argument(
        "--regrade", action="store_true", help="grade again runs that already have a grade.json"
    )
    parser.add_argument("--parallel", "-j", type=int, default=1, help="grade N runs at once (default 1)")
    parser.add_argument(
        "--judges",
        type=Path,
        default=None,
        help="YAML/JSON map of judge name -> {provider, model, base_url, api_key_env} enabling `judge` checks "
        "(off by default; a misconfigured judge is refused before anything is graded)",
    )
    parser.add_argument("--quiet", "-q", action="store_true", help="only the summary line")


def _project(value: str) -> Path | None:
    root = Path(value)
    return root if (root / "specs").is_dir() or (root / "generated").is_dir() else None


def execute(args: argparse.Namespace) -> int:
    """Grade the target; print one line per run and a summary."""
    from harness.artifacts.store import FutureSchemaError
    from harness.errors import NothingSelected, UsageError
    from harness.grade import TreeEntry, grade_tree

    target: Path = args.target
    if not target.exists():
        raise UsageError(f"{target} does not exist")

    from harness.report.viewer import refresh_page

    def progress(n: int, total: int, entry: TreeEntry) -> None:
        refresh_page(entry.run_dir, force=entry.action in ("graded", "regraded"))
        if args.quiet:
            return
        g = entry.grade
        verdict = ("pass" if g.passed else "FAIL") if g.status.value == "graded" else g.status.value
        note = f" ({g.error})" if g.error else ""
        print(f"[{n}/{total}] {entry.action:8} {verdict:13} {entry.run_dir}{note}", file=sys.stderr)

    from harness.commands._generated import damaged, refuse_stale, unwritable
    from harness.grade.project import DamagedCompile

    project = _project(args.project)
    refuse_stale(project)
    judges = None
    if args.judges is not None:
        import yaml

        from harness.grade import JudgeConfigError, check_judge_config

        try:
            raw = yaml.safe_load(args.judges.read_text(encoding="utf-8"))
            if not isinstance(raw, dict):
                raise UsageError(f"{args.judges}: expected a map of judge name -> configuration")
            judges = check_judge_config(raw)
        except (OSError, yaml.YAMLError, JudgeConfigError) as exc:
            raise UsageError(f"{args.judges}: {exc}") from None
    try:
        with unwritable(target, "the grades written before it are kept; rerun to grade the rest"):
            entries = grade_tree(
                target,
                project=project,
                regrade=args.regrade,
                parallel=args.parallel,
                judge=judges,
                progress=progress,
            )
    except FutureSchemaError as exc:
        raise UsageError(str(exc)) from None
    except DamagedCompile as exc:
        raise UsageError(damaged(exc)) from None
    if not entries:
        raise NothingSelected(f"no run (a folder with run.json) under {target}")
    actions = Counter(e.action for e in entries)
    statuses = Counter(e.grade.status.value for e in entries)
    passed = sum(1 for e in entries if e.grade.status.value == "graded" and e.grade.passed)
    failed = statuses["graded"] - passed
    print(
        f"{len(entries)} run(s): graded {actions['graded']}, regraded {actions['regraded']}, "
        f"reused {actions['reused']}, stale {actions['stale']}; passed {passed}, failed {failed}, "
        f"failed_to_run {statuses['failed_to_run']}, ungradeable {statuses['ungradeable']}"
    )
    if actions["stale"]:
        print(
            f"assay: {actions['stale']} grade(s) were made by another grader; rerun with --regrade",
            file=sys.stderr,
        )
    return 0 if failed == 0 and statuses["graded"] == len(entries) else 1
