"""Agent arguments that name files, checked before any trial runs.

The runner reads them outside the sandbox (harness/agents.py), so a missing or escaping
file would fail every trial of the agent; here it is a spec error instead:

- `args.script` (any adapter; the scripted agent's script): a project file, given
  project-relative or relative to specs/agents/, that is a valid script;
- `args.scenario_script` (the scripted agent): a path inside each scenario's folder,
  `scenarios/<id>/<scenario_script>`, holding that scenario's own script.

A script is valid when it parses and has the shape adapters/scripted.py reads
(`compiler.specs.script`), each step naming exactly one action (E244).

A scripted agent must have steps for every scenario a matrix runs it on: its scenario's
own script, or an entry of `scenarios:` (or `default:` / top-level `steps:`) in its
script. Without them it would do nothing and every trial would be graded a failure of the
agent, when it is a gap in the benchmark (E237, checked in the expand stage).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from compiler.errors import Collector, Loc, SpecError
from compiler.load import Inputs, not_utf8
from compiler.paths import not_a_link_out
from compiler.provided import AGENT_DIR, agent_file_candidates
from compiler.rawcheck import model_of
from compiler.specs.script import ACTIONS, ScriptDoc, StepDoc
from compiler.yamlio import Doc, Path_, dotted, parse

SCRIPTED = "scripted"


class Coverage(NamedTuple):
    """Which scenarios a valid script has steps for, picked as adapters/scripted.py picks them:
    `scenarios.<id>`, else `scenarios.default`, else `steps`."""

    named: frozenset[str]
    """Scenario ids with an entry of their own under `scenarios:`."""
    others: bool
    """Whether every other scenario gets steps (`scenarios.default`, or `steps`)."""
    where: Loc
    """Where the steps would be (the `scenarios:` key, or the script's start), for an error."""
    path: str
    """The key path of `where`, as an error prints it."""

    def covers(self, scenario: str) -> bool:
        """Whether the script has steps for this scenario."""
        return scenario in self.named or self.others


@dataclass(frozen=True)
class Script:
    """Which scenarios a scripted agent has steps for."""

    file: str | None
    """Project-relative script file (`args.script`), if any."""
    coverage: Coverage | None
    """What `file` has steps for (None: no valid file)."""
    per_scenario: str | None
    """`args.scenario_script`: the script's path inside each scenario's folder."""
    own: dict[str, Coverage | None] = field(default_factory=dict)
    """Scenario folder -> what its own script covers, for each folder that has one (None: invalid)."""
    problems: tuple[SpecError, ...] = ()
    """Errors in the scenarios' own scripts: the expand stage reports them, so that `assay new
    scripts` (which needs only the validate stage) can still rewrite a broken one."""

    def has_steps(self, scenario: str, root: str) -> bool:
        """Whether the agent has steps for this scenario (`root` its folder); an invalid script of
        its own counts as having them, since its errors are reported already."""
        if root in self.own:  # the scenario's own script wins, steps or not (harness/trial/agent.py)
            own = self.own[root]
            return own is None or own.covers(scenario)
        return self.coverage is not None and self.coverage.covers(scenario)

    def hint(self, scenario: str, root: str) -> str:
        """What to write so the agent has steps for a scenario."""
        places = []
        if self.per_scenario:
            places.append(
                f"write {root}/{self.per_scenario} (`assay new scripts {scenario}` writes it from the "
                "scenario's reference and negatives)"
            )
        if self.file:
            places.append(f"add `{scenario}:` under `scenarios:` in {self.file}")
        return " or ".join(places) + "; without steps the agent would do nothing and fail every trial"


def _script_file(c: Collector, doc: Doc, path: Path_, value: Any, inputs: Inputs) -> str | None:
    """The project file `args.script` names; errors when it is not a relative path to an existing file."""
    if not isinstance(value, str) or not value:
        c.add(doc.loc(path), dotted(path), "E103", "a script is a project-relative path")
        return None
    if value.startswith("/") or "\\" in value:
        c.add(doc.loc(path), dotted(path), "E210", f"path {value!r} must be relative and use '/'")
        return None
    inside = [r for r in agent_file_candidates(value) if r != ".." and not r.startswith("../")]
    if not inside:
        c.add(doc.loc(path), dotted(path), "E211", f"path {value!r} escapes the project")
        return None
    found = next((r for r in inside if r in inputs.agent_files or r in inputs.data), None)
    away = next((r for r in inside if r in inputs.outside), None)
    if found is None and away is not None:
        not_a_link_out(c, doc.loc(path), path, away, inputs.outside)
    elif found is None:
        c.add(
            doc.loc(path),
            dotted(path),
            "E236",
            f"script file {value!r} not found",
            f"looked for {' and '.join(inside)} (project-relative, or relative to {AGENT_DIR}/)",
        )
    return found


def read_script(c: Collector, rel: str, data: bytes) -> Coverage | None:
    """What a script file has steps for; None (and its errors in `c`) when it is not a valid script."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        c.extend([not_utf8(rel, data, exc)])
        return None
    doc, errors = parse(rel, text)
    c.extend(errors)
    spec: ScriptDoc | None = model_of(c, doc, ScriptDoc) if not errors else None
    if spec is None:
        return None
    before = len(c.errors)
    _one_action_each(c, doc, ("steps",), spec.steps)
    for sid, steps in (spec.scenarios or {}).items():
        _one_action_each(c, doc, ("scenarios", sid), steps)
    if len(c.errors) > before:
        return None
    # A list given, even an empty one, is steps written on purpose (as the runner reads them).
    by_scenario = spec.scenarios or {}
    others = "default" in by_scenario or spec.steps is not None
    key: Path_ = ("scenarios",) if spec.scenarios is not None else ()
    return Coverage(frozenset(by_scenario) - {"default"}, others, doc.loc(key, key=True), dotted(key))


def _one_action_each(c: Collector, doc: Doc, path: Path_, steps: list[StepDoc] | None) -> None:
    """Every step names exactly one action, in nested `choose` and `repeat` steps too."""
    for i, step in enumerate(steps or ()):
        sp = (*path, i)
        named = [a for a in ACTIONS if a in step.model_fields_set]
        if len(named) != 1:
            c.add(
                doc.loc(sp),
                dotted(sp),
                "E244",
                f"a step needs exactly one action (got {', '.join(named) or 'none'})",
                f"one of: {', '.join(ACTIONS)}",
            )
        for j, option in enumerate(step.choose or ()):
            _one_action_each(c, doc, (*sp, "choose", j, "steps"), option.steps)
        if step.repeat is not None:
            _one_action_each(c, doc, (*sp, "repeat", "steps"), step.repeat.steps)


def _own_scripts(per: str, inputs: Inputs) -> tuple[dict[str, Coverage | None], tuple[SpecError, ...]]:
    """Each scenario's own script (`per` inside its folder), read and checked, with its errors."""
    mine = Collector()
    own: dict[str, Coverage | None] = {}
    for folder in inputs.scenario_dirs:
        rel = f"{folder}/{per}"
        if rel in inputs.data:
            own[folder] = read_script(mine, rel, inputs.data[rel])
        elif not not_a_link_out(mine, Loc(rel, 1, 1), (), rel, inputs.outside):
            own[folder] = None
    return own, tuple(mine.errors)


def check(c: Collector, doc: Doc, adapter: str, args: dict[str, Any], inputs: Inputs) -> Script | None:
    """Check the file arguments of one agent; its `Script` when it is a scripted agent."""
    file = None
    if "script" in args:
        file = _script_file(c, doc, ("args", "script"), args["script"], inputs)
    per = args.get("scenario_script")
    if per is not None:
        path: Path_ = ("args", "scenario_script")
        norm = posixpath.normpath(per) if isinstance(per, str) and per else ""
        if not norm or per.startswith("/") or norm == ".." or norm.startswith("../"):
            c.add(
                doc.loc(path),
                dotted(path),
                "E212",
                f"scenario_script {per!r} must be a relative path inside each scenario's folder",
            )
            per = None
        else:
            per = norm
    if adapter != SCRIPTED:
        return None
    if file is None and per is None:
        if "script" not in args:
            c.add(
                doc.loc(("adapter",)),
                "args",
                "E102",
                "the scripted agent needs `args.script` or `args.scenario_script`",
                "docs/scripted-agent.md",
            )
        return None
    coverage = read_script(c, file, inputs.agent_files.get(file) or inputs.data[file]) if file else None
    own, problems = _own_scripts(per, inputs) if per is not None else ({}, ())
    return Script(file=file, coverage=coverage, per_scenario=per, own=own, problems=problems)
