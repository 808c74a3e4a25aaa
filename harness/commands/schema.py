"""`assay schema`: write (or check) generated/schema/*.json from the models."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import BaseModel

HELP = "write the JSON Schemas of every spec kind and artifact to generated/schema/ (--check: fail on drift)"


def configure(parser: argparse.ArgumentParser) -> None:
    """Arguments of `assay schema`."""
    parser.add_argument(
        "--check", action="store_true", help="exit 1 when a committed schema is stale or missing"
    )
    parser.add_argument("--out", default=None, help="folder (default: <project>/generated/schema)")


def schemas(project: Path) -> dict[str, str]:
    """File name -> content of every schema: spec kinds (with the project's own check kinds),
    compiler artifacts, run-time records."""
    from compiler.schemas import artifact_schemas, dumps, model_schema, project_kinds, spec_schemas
    from harness.artifacts.records import Grade, RunRecord
    from harness.report.summary import Summary

    specs = spec_schemas(project_kinds(project))
    out = {f"{k}.json": dumps(v) for k, v in {**specs, **artifact_schemas()}.items()}
    records: tuple[tuple[str, type[BaseModel]], ...] = (
        ("run", RunRecord),
        ("grade", Grade),
        ("summary", Summary),
    )
    for name, model in records:
        out[f"{name}.json"] = dumps(model_schema(model, f"assay {name} record", by_alias=False))
    return out


def execute(args: argparse.Namespace) -> int:
    """Write or check; 1 on drift."""
    folder = Path(args.out) if args.out else Path(args.project) / "generated" / "schema"
    wanted = schemas(Path(args.project))
    if args.check:
        stale = [
            n
            for n, text in sorted(wanted.items())
            if not (folder / n).is_file() or (folder / n).read_text(encoding="utf-8") != text
        ]
        extra = (
            sorted(p.name for p in folder.glob("*.json") if p.name not in wanted) if folder.is_dir() else []
        )
        for n in stale:
            print(f"assay: schema drift: {folder / n} is stale or missing", file=sys.stderr)
        for n in extra:
            print(f"assay: schema drift: {folder / n} is not produced by any model", file=sys.stderr)
        if stale or extra:
            print("assay: run `assay schema` and commit generated/schema/", file=sys.stderr)
            return 1
        print(f"assay: {len(wanted)} schemas up to date")
        return 0
    folder.mkdir(parents=True, exist_ok=True)
    for n, text in sorted(wanted.items()):
        path = folder / n
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
    for p in folder.glob("*.json"):
        if p.name not in wanted:
            p.unlink()
    print(f"assay: wrote {len(wanted)} schemas to {folder}")
    return 0
