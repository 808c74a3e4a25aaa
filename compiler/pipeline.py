"""The compiler as one named pipeline: load -> validate -> expand -> emit.

`compile_project` is what `assay compile` calls. When the fingerprint of every input
(and of the compiler itself) equals the one in generated/manifest.json, nothing is
parsed and nothing is written.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from compiler import load as load_stage
from compiler.errors import SpecError, SpecErrors

if TYPE_CHECKING:
    from compiler.expand import Plan
    from compiler.resolved import Validated

MANIFEST_FILE = "manifest.json"  # = compiler.contract.MANIFEST_FILE; the up-to-date check imports no models
OUTPUTS_FILE = ".outputs"
"""What the last compile wrote into generated/, `sha256  path` per line: a job file deleted or edited
since makes generated/ out of date even when no input changed."""


@dataclass(frozen=True)
class Result:
    """What a compile did."""

    plan: Plan | None
    """None when the compile was skipped (inputs unchanged)."""
    up_to_date: bool
    written: int
    jobs: int


@cache
def compiler_hash() -> str:
    """A hash of the compiler's own source, so a changed compiler recompiles."""
    h = hashlib.sha256()
    for p in sorted(Path(__file__).parent.rglob("*.py")):
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


def build(root: Path) -> Plan:
    """load -> validate -> expand, in memory (no writes); raises SpecErrors."""
    inputs = load_stage.scan(root)
    return plan_of(inputs)


def plan_of(inputs: load_stage.Inputs) -> Plan:
    """Parse, validate and expand already-scanned inputs."""
    # The later stages import pydantic, cerberus and Jinja2; an unchanged project never needs them.
    from compiler import expand as expand_stage
    from compiler import validate as validate_stage

    sources = load_stage.parse_sources(inputs)
    validated = validate_stage.validate(sources, inputs.fingerprint(compiler_hash()))
    return expand_stage.expand(validated)


def _stored_fingerprint(generated: Path) -> str | None:
    try:
        with (generated / MANIFEST_FILE).open(encoding="utf-8") as fh:
            head = fh.read(4096)
        data = (
            json.loads(head)
            if head.rstrip().endswith("}") and len(head) < 4096
            else json.loads((generated / MANIFEST_FILE).read_text(encoding="utf-8"))
        )
    except (OSError, ValueError):
        return None
    value = data.get("fingerprint")
    return value if isinstance(value, str) else None


def outputs_record(files: dict[str, bytes]) -> str:
    """The OUTPUTS_FILE text for files written into generated/ (path relative to it -> content)."""
    return "".join(f"{hashlib.sha256(data).hexdigest()}  {rel}\n" for rel, data in sorted(files.items()))


def _outputs_intact(generated: Path) -> bool:
    """Whether every file the last compile wrote is still there, unchanged."""
    try:
        lines = (generated / OUTPUTS_FILE).read_text(encoding="utf-8").splitlines()
        for line in lines:
            digest, _, rel = line.partition("  ")
            if hashlib.sha256((generated / rel).read_bytes()).hexdigest() != digest:
                return False
    except (OSError, ValueError):
        return False
    return bool(lines)


def _unwritable(root: Path, exc: OSError) -> SpecErrors:
    """generated/ could not be written: an error naming the path in the way, never a traceback."""
    where = Path(exc.filename2 or exc.filename or "generated").absolute()  # os.replace: destination second
    why = exc.strerror or str(exc)
    if isinstance(exc, NotADirectoryError):  # name the file in the way, not the one that could not be written
        where = next((p for p in where.parents if p.is_file()), where)
        why = "a file stands where the compiler needs a folder"
    shown = where.relative_to(root).as_posix() if where.is_relative_to(root) else str(where)
    hint = "generated/ is the compiler's own: move what is in the way or make it writable (or use --out)"
    return SpecErrors([SpecError(shown, 1, 1, "", "E290", f"cannot write the compiled output: {why}", hint)])


def compile_project(root: Path, *, generated: Path | None = None, force: bool = False) -> Result:
    """Compile the project at `root` into `generated/` (default root/generated)."""
    gen = generated or root / "generated"
    inputs = load_stage.scan(root)
    fingerprint = inputs.fingerprint(compiler_hash())
    if not force and _stored_fingerprint(gen) == fingerprint and _outputs_intact(gen):
        (gen / MANIFEST_FILE).touch()  # tells the noxfile's cheap mtime check that generated/ is current
        return Result(plan=None, up_to_date=True, written=0, jobs=0)
    from compiler import emit as emit_stage

    plan = plan_of(inputs)
    try:
        written = emit_stage.emit(plan, gen)
    except OSError as exc:
        raise _unwritable(root.absolute(), exc) from None
    return Result(
        plan=plan, up_to_date=False, written=written, jobs=sum(m.jobs for m in plan.matrices.values())
    )


def validated(root: Path) -> Validated:
    """load -> validate only: every spec checked alone and across files, nothing expanded.

    For tools that work on scenarios before any matrix can run them (`assay new scripts`
    writes the steps a matrix's scripted agents would otherwise lack)."""
    from compiler import validate as validate_stage

    inputs = load_stage.scan(root)
    return validate_stage.validate(load_stage.parse_sources(inputs), inputs.fingerprint(compiler_hash()))
