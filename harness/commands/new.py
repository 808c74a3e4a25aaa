"""`assay new scenario <id>` and `assay new scripts [<id>...]`.

`new scenario` scaffolds a scenario that compiles and validates, with TODOs, and writes its
scripted-agent steps, so the demo's scripted agents run it at once. The split decides which
matrices run it (the demo runs the held-out `test` split), so it is asked for (or given with
`--split`), never assumed. `new scripts` (re)writes the scripted-agent steps of existing
scenarios from their reference and negatives (harness/commands/_scripts.py).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.errors import UsageError

HELP = "scaffold a new scenario (assay new scenario <id> --split test), or its scripted-agent steps"
SPLITS = ("train", "test")


def configure(parser: argparse.ArgumentParser) -> None:
    """Arguments of `assay new`."""
    parser.add_argument("what", choices=("scenario", "scripts"), help="what to scaffold")
    parser.add_argument(
        "ids", nargs="*", metavar="id", help="scenario id (scripts: these scenarios; default every one)"
    )
    parser.add_argument("--family", default=None, help="family of related scenarios (asked; default the id)")
    parser.add_argument(
        "--split",
        choices=SPLITS,
        default=None,
        help="train or test (asked when not given; the demo runs the test split)",
    )
    parser.add_argument(
        "--language", default="python", help="the entry's language (one the project supports)"
    )
    parser.add_argument(
        "--force", action="store_true", help="scripts: overwrite hand-written scripted/*.yaml too"
    )


def _ask(question: str, default: str | None, choices: tuple[str, ...] = ()) -> str:
    """One answer from the terminal (the default on an empty line)."""
    shown = f" [{'/'.join(choices)}]" if choices else ""
    while True:
        print(f"{question}{shown}" + (f" (default {default})" if default else "") + ": ", end="", flush=True)
        answer = sys.stdin.readline().strip() or (default or "")
        if answer and (not choices or answer in choices):
            return answer
        print(f"  answer one of {', '.join(choices)}" if choices else "  an answer is needed")


def _interactive() -> bool:
    try:
        return sys.stdin.isatty()
    except (AttributeError, OSError, ValueError):  # no terminal (a test harness, a closed stdin)
        return False


def _split_and_family(args: argparse.Namespace, sid: str) -> tuple[str, str]:
    interactive = _interactive()
    split = args.split
    if split is None:
        if not interactive:
            raise UsageError(
                "give --split train or --split test: a matrix selects scenarios by split "
                "(the demo runs the held-out test split)"
            )
        split = _ask("split: train, or test (held out; what the demo runs)", "test", SPLITS)
    family = args.family
    if family is None:
        family = _ask("family (related scenarios share one split)", sid) if interactive else sid
    return split, family


def _write_scripts(project: Path, ids: list[str], *, force: bool) -> int:
    """Write the scripted-agent steps of these scenarios (all when none); print what was done."""
    from compiler.errors import SpecErrors, render
    from compiler.pipeline import validated
    from harness.commands import _scripts

    try:
        v = validated(project)
    except SpecErrors as exc:
        print(render(exc.errors), file=sys.stderr)
        print("assay: fix the spec errors above, then run `assay new scripts` again", file=sys.stderr)
        return 2
    unknown = [s for s in ids if s not in v.scenarios]
    if unknown:
        raise UsageError(
            f"unknown scenario(s): {', '.join(unknown)}; known: {', '.join(sorted(v.scenarios))}"
        )
    links = sorted(
        {name for levels in v.levels.values() for lv in levels.values() for name in lv.get("links", {})}
    )
    for sid in ids or sorted(v.scenarios):
        job = v.scenarios[sid].job
        try:
            hints = _scripts.Hints.read(project / job.root)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        written, kept = _scripts.write(job, project, hints, links, force=force)
        for path in written:
            print(f"assay: wrote {path.relative_to(project).as_posix()}")
        for path in kept:
            print(
                f"assay: kept {path.relative_to(project).as_posix()} (written by hand; --force replaces it)"
            )
    return 0


def execute(args: argparse.Namespace) -> int:
    """Write the scenario folder (or scripts) and say what to do next."""
    project = Path(args.project)
    if args.what == "scripts":
        return _write_scripts(project, list(args.ids), force=args.force)
    if len(args.ids) != 1:
        raise UsageError("assay new scenario takes one id (the folder name under scenarios/)")
    sid = args.ids[0]
    from harness.commands._scaffold import ScenarioTemplate, scaffold_scenario

    split, family = _split_and_family(args, sid)
    values = ScenarioTemplate(id=sid, family=family, split=split, language=args.language)
    written = scaffold_scenario(project, values)
    folder = project / "scenarios" / sid
    print(f"assay: created {folder} ({len(written)} files, split {split}, family {family}):")
    for path in written:
        print(f"  {path.relative_to(folder).as_posix()}")
    done = _write_scripts(project, [sid], force=False)
    print(
        "\nIt is a complete toy scenario. Replace every TODO with the real task (seed/, reference/,"
        f" prompt.md, checks, negatives),\nthen run: assay validate --scenario {sid}"
        + (
            f" and `assay new scripts {sid}` (the scripted agents' steps follow the reference)"
            if done == 0
            else ""
        )
    )
    return done
