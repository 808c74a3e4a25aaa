"""Agent arguments that name files, checked before any trial runs.

The runner reads them outside the sandbox (harness/agents.py), so a missing or escaping
file would fail every trial of the agent; here it is a spec error instead:

- `args.script` (any adapter; the scripted agent's script): a project file, given
  project-relative or relative to specs/agents/, that parses as YAML;
- `args.scenario_script` (the scripted agent): a path inside each scenario's folder,
  `scenarios/<id>/<scenario_script>`, holding that scenario's own script.

A scripted agent must have steps for every scenario a matrix runs it on: its scenario's
own script, or an entry of `scenarios:` (or `default:` / top-level `steps:`) in its
script. Without them it would do nothing and every trial would be graded a failure of the
agent, when it is a gap in the benchmark (E237, checked in the expand stage).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Any

from compiler.errors import Collector, Loc
from compiler.load import Inputs
from compiler.provided import AGENT_DIR, agent_file_candidates
from compiler.yamlio import Doc, Path_, dotted, parse

SCRIPTED = "scripted"


@dataclass(frozen=True)
class Script:
    """Which scenarios a scripted agent has steps for."""

    file: str | None
    """Project-relative script file (`args.script`), if any."""
    covers: frozenset[str] | None
    """Scenario ids of its `scenarios:` map; None when it covers every scenario (`default:` or `steps:`)."""
    per_scenario: str | None
    """`args.scenario_script`: the script's path inside each scenario's folder."""

    def has_steps(self, scenario: str, root: str, files: dict[str, str]) -> bool:
        """Whether the agent has steps for this scenario (`root` its folder, `files` the input hashes)."""
        if self.per_scenario is not None and f"{root}/{self.per_scenario}" in files:
            return True
        return self.file is not None and (self.covers is None or scenario in self.covers)

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
    if found is None:
        c.add(
            doc.loc(path),
            dotted(path),
            "E236",
            f"script file {value!r} not found",
            f"looked for {' and '.join(inside)} (project-relative, or relative to {AGENT_DIR}/)",
        )
    return found


def _covers(c: Collector, rel: str, data: bytes) -> frozenset[str] | None:
    """The scenarios a script has steps for (None: all); its syntax errors are spec errors in it."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        c.add(Loc(rel, 1, 1), "", "E001", "the script is not UTF-8")
        return frozenset()
    script, errors = parse(rel, text)
    c.extend(errors)
    if not isinstance(script.data, dict):
        if not errors:
            c.add(script.loc(()), "", "E103", "a script is a map with `steps:` or `scenarios:`")
        return frozenset()
    by_scenario = script.data.get("scenarios")
    if "steps" in script.data or (isinstance(by_scenario, dict) and "default" in by_scenario):
        return None
    return frozenset(by_scenario) if isinstance(by_scenario, dict) else frozenset()


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
    covers = _covers(c, file, inputs.agent_files.get(file) or inputs.data[file]) if file else frozenset()
    return Script(file=file, covers=covers, per_scenario=per)
