"""Scaffolding new specs from the templates under harness/templates/.

`scaffold_scenario` writes `scenarios/<id>/` from `templates/scenario/`: every `*.j2` file
is rendered with Jinja2 (StrictUndefined) and written without the suffix. The result is a
complete toy scenario that compiles and passes `assay validate`; its TODOs say what to
replace with the real task.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from harness.errors import UsageError

TEMPLATES = Path(__file__).parent.parent / "templates"
SLUG = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")


@dataclass(frozen=True)
class ScenarioTemplate:
    """What the scenario template is rendered with."""

    id: str
    family: str
    split: str
    language: str


def scaffold_scenario(project: Path, values: ScenarioTemplate) -> list[Path]:
    """Write scenarios/<id>/ from the template; return the files written, sorted.

    Raises:
        UsageError: the id is not a slug, the split is unknown, or the folder exists.
    """
    import jinja2

    for what, value in (("id", values.id), ("family", values.family)):
        if not SLUG.match(value):
            raise UsageError(f"scenario {what} {value!r} is not a slug (lower-case letters, digits, - _ .)")
    if values.split not in ("train", "test"):
        raise UsageError(f"split must be train or test, not {values.split!r}")
    dest = project / "scenarios" / values.id
    if dest.exists():
        raise UsageError(f"{dest} already exists; pick another id or remove it")
    source = TEMPLATES / "scenario"
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(source)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )
    context = {"id": values.id, "family": values.family, "split": values.split, "language": values.language}
    written: list[Path] = []
    for template in sorted(p for p in source.rglob("*") if p.is_file()):
        rel = template.relative_to(source)
        target = dest / (rel.with_suffix("") if rel.suffix == ".j2" else rel)
        target.parent.mkdir(parents=True, exist_ok=True)
        if rel.suffix == ".j2":
            target.write_text(env.get_template(rel.as_posix()).render(**context), encoding="utf-8")
        else:
            target.write_bytes(template.read_bytes())
        written.append(target)
    return sorted(written)
