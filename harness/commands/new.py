"""`assay new scenario <id>`: scaffold a scenario that compiles and validates, with TODOs."""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = "scaffold a new spec from a template (assay new scenario <id>)"


def configure(parser: argparse.ArgumentParser) -> None:
    """Arguments of `assay new`."""
    parser.add_argument("what", choices=("scenario",), help="what to scaffold")
    parser.add_argument("id", help="the new scenario's id (= its folder name under scenarios/)")
    parser.add_argument("--family", default=None, help="family of related scenarios (default: the id)")
    parser.add_argument(
        "--split", choices=("train", "test"), default="train", help="train or test (default train)"
    )
    parser.add_argument(
        "--language", default="python", help="the entry's language (one the project supports)"
    )


def execute(args: argparse.Namespace) -> int:
    """Write the scenario folder and say what to do next."""
    from harness.commands._scaffold import ScenarioTemplate, scaffold_scenario

    project = Path(args.project)
    values = ScenarioTemplate(
        id=args.id, family=args.family or args.id, split=args.split, language=args.language
    )
    written = scaffold_scenario(project, values)
    folder = project / "scenarios" / args.id
    print(f"assay: created {folder} ({len(written)} files):")
    for path in written:
        print(f"  {path.relative_to(folder).as_posix()}")
    print(
        "\nIt is a complete toy scenario. Replace every TODO with the real task (seed/, reference/,"
        " prompt.md, checks, negatives),\nthen run: assay validate --scenario " + args.id
    )
    return 0
