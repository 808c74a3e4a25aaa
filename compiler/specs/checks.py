"""Checks: the built-in kinds' parameters, scenario check entries, and `kind: check-kind`.

One table, `BUILTIN`, maps each built-in kind to the model of a check entry of that
kind (the common fields plus the kind's parameters). A kind not in the table must be
declared by a `check-kind` spec; its entry is the common fields plus `with:`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from compiler.specs.base import SpecModel

TextOrList = str | list[str]


class CountDoc(SpecModel):
    """Pass when the number of items at a JSON path is at most a limit."""

    json_path: str = Field(
        default="$", description="Path of the list to count in the command's JSON stdout ($, $.a.b, $.a[0])."
    )
    max_param: str | None = Field(
        default=None, description="Name of the parameter holding the limit (user kinds)."
    )
    max: int | None = Field(default=None, ge=0, description="The limit itself.")


class JsonPathDoc(SpecModel):
    """Pass when the JSON value at a path equals a value."""

    path: str = Field(description="Path into the command's JSON stdout.")
    equals: Any = Field(description="Value it must equal.")


class ResultDoc(SpecModel):
    """How to read a command's result: exactly one of exit, count, json_path."""

    exit: int | None = Field(default=None, description="The exit status must equal this.")
    count: CountDoc | None = Field(default=None, description="Count findings against a maximum.")
    json_path: JsonPathDoc | None = Field(
        default=None, description="A JSON value must equal an expected value."
    )


class CheckCommon(SpecModel):
    """Fields every check entry has."""

    id: str = Field(description="Check id (slug), unique within the scenario.")
    kind: str = Field(description="Built-in kind or the id of a check-kind spec.")
    layer: str | None = Field(
        default=None, description="What a failure implicates: `agent` (default) or a named product layer."
    )
    authority: str | None = Field(
        default=None, description="Named authority whose validity this check reports."
    )
    severity: Literal["error", "warning"] | None = Field(
        default=None, description="error findings make a passing run not usable."
    )
    timeout_s: float | None = Field(default=None, gt=0, description="Wall-clock limit of the check.")
    description: str | None = Field(default=None, description="What the check verifies.")
    meta: dict[str, Any] | None = Field(default=None, description="Free-form metadata.")


class CommandCheck(CheckCommon):
    """`command`: run a shell command in the workspace."""

    run: str = Field(description="Shell command (Jinja2 template over `scenario`), cwd = workspace.")
    exit: int | None = Field(
        default=None, description="Required exit status (default 0 unless `result` is given)."
    )
    result: ResultDoc | None = Field(
        default=None, description="How to read the result instead of the exit status."
    )
    env: dict[str, str] | None = Field(default=None, description="Extra environment of the command.")


class ContainsCheck(CheckCommon):
    """`contains` / `absent`: text or regex alternatives in files."""

    file: str | None = Field(default=None, description="Workspace file to search.")
    files: str | None = Field(default=None, description="Glob of workspace files to search.")
    text: TextOrList | None = Field(default=None, description="Text, or a list of alternatives.")
    regex: TextOrList | None = Field(default=None, description="Regex, or a list of alternatives.")
    min: int | None = Field(default=None, ge=0, description="Minimum occurrences (contains: default 1).")
    max: int | None = Field(default=None, ge=0, description="Maximum occurrences.")


class AnswerCheck(CheckCommon):
    """`answer`: a key of answer.json equals (or matches) an expected value."""

    key: str = Field(description="Dotted path into answer.json.")
    equals: Any = Field(default=None, description="Expected JSON value.")
    expected: Any = Field(
        default=None, description="Seed 000's name for `equals` (scenario.json); give one of the two."
    )
    matches: str | None = Field(default=None, description="Regex the value's text must match.")


class FileExistsCheck(CheckCommon):
    """`file-exists`: paths exist (or not)."""

    path: TextOrList = Field(description="Workspace path or list of paths.")
    exists: bool = Field(default=True, description="false: the paths must not exist.")


class UnchangedCheck(CheckCommon):
    """`unchanged`: files equal the seed."""

    paths: list[str] = Field(description="Globs of files that must equal the seed.")


class PytestCheck(CheckCommon):
    """`pytest`: run a pytest suite; one outcome per test (negatives may name `<check>::<test id>`)."""

    tests: TextOrList = Field(
        description="Test files or folders: workspace-relative, or absolute paths the scenario mounts."
    )
    args: list[str] | None = Field(default=None, description="Extra pytest arguments.")
    cwd: str | None = Field(default=None, description="Working folder (default: the workspace).")
    python: str | None = Field(
        default=None, description="Interpreter that runs pytest (default: python3 of the check's PATH)."
    )
    env: dict[str, str] | None = Field(default=None, description="Extra environment of the run.")
    setup: list[str] | None = Field(
        default=None,
        description="Shell commands run first, in order, where pytest runs (a test script's data"
        " generation); one that fails fails the check.",
    )


Count = Annotated[int, Field(ge=0)]


class TraceParams(SpecModel):
    """What the agent ran of a traced tool: the `trace` check's parameters, and an expectation's `trace:`."""

    command: str | None = Field(default=None, description="Traced command name (default: any).")
    subcommand: str | list[str] | None = Field(default=None, description="First argument(s) to match.")
    exit: int | list[int] | None = Field(default=None, description="Count only invocations with these exits.")
    after_last_write: bool | None = Field(
        default=None, description="Count only invocations after the last write of an entry file."
    )
    min: Count | None = Field(default=None, description="Minimum invocations (default 1).")
    max: Count | None = Field(default=None, description="Maximum invocations.")


class EventsParams(SpecModel):
    """Events a treatment logged: the `events` check's parameters, and an expectation's `events:`."""

    file: str | None = Field(default=None, description="JSONL file in the state dir (default events.jsonl).")
    where: dict[str, Any] | None = Field(default=None, description="Field -> value filter.")
    min: Count | None = Field(default=None, description="Minimum matching events (default 1).")
    max: Count | None = Field(default=None, description="Maximum matching events.")


class TranscriptParams(SpecModel):
    """What the normalized transcript holds: the `transcript` check's parameters, and an expectation's."""

    contains: TextOrList | None = Field(default=None, description="Text or alternatives that must appear.")
    absent: TextOrList | None = Field(default=None, description="Text or alternatives that must not appear.")
    regex: bool | None = Field(default=None, description="Treat contains/absent as regexes.")
    role: str | None = Field(default=None, description="Only events of this role.")
    tool: str | None = Field(default=None, description="Only events of this tool.")
    min: Count | None = Field(default=None, description="Minimum matching rows (default 1).")
    max: Count | None = Field(default=None, description="Maximum matching rows.")


class SnapshotParams(SpecModel):
    """Validity of the entry over time: the `snapshot` check's parameters, and an expectation's."""

    authority: str | None = Field(default=None, description="Authority whose checks judge each snapshot.")
    run: str | None = Field(
        default=None, description="Validity command per snapshot (exit 0 = valid; `{file}` is its path)."
    )
    exit: int | None = Field(default=None, description="Exit status of `run` that means valid (default 0).")
    timeout_s: float | None = Field(default=None, gt=0, description="Wall-clock limit of `run`.")
    final_valid: bool | None = Field(
        default=None, description="The last snapshot must be valid (default true)."
    )
    max_regressions: Count | None = Field(default=None, description="Allowed valid-to-invalid transitions.")
    first_valid_within: Count | None = Field(
        default=None, description="The first valid snapshot's index must be at most this."
    )


class TraceCheck(CheckCommon, TraceParams):
    """`trace`: what the agent ran."""

    command: str = Field(description="Traced command name.")


class EventsCheck(CheckCommon, EventsParams):
    """`events`: a JSONL event log a treatment writes, filtered and counted."""

    file: str = Field(description="JSONL file in the state dir.")


class TranscriptCheck(CheckCommon, TranscriptParams):
    """`transcript`: the normalized transcript contains (or not) something."""


class SnapshotCheck(CheckCommon, SnapshotParams):
    """`snapshot`: validity of the entry over time."""


class JudgeCheck(CheckCommon):
    """`judge`: an LLM rubric over the transcript; unavailable without a provider."""

    rubric: str = Field(description="Rubric (Jinja2 template over `scenario`).")
    model: str | None = Field(default=None, description="Judge provider name.")


class UserCheck(CheckCommon):
    """A check of a user kind declared in specs/checks/."""

    with_: dict[str, Any] | None = Field(
        default=None, alias="with", description="Parameters of the user kind."
    )


BUILTIN: dict[str, type[CheckCommon]] = {
    "command": CommandCheck,
    "contains": ContainsCheck,
    "absent": ContainsCheck,
    "answer": AnswerCheck,
    "file-exists": FileExistsCheck,
    "unchanged": UnchangedCheck,
    "pytest": PytestCheck,
    "trace": TraceCheck,
    "events": EventsCheck,
    "transcript": TranscriptCheck,
    "snapshot": SnapshotCheck,
    "judge": JudgeCheck,
}
"""Built-in check kinds and the model of a check entry of each."""

TEMPLATE_FIELDS: dict[str, tuple[str, ...]] = {
    "command": ("run",),
    "judge": ("rubric",),
    "snapshot": ("run",),
}
"""Template-typed parameters per built-in kind (rendered with Jinja2 at compile time)."""


class ParamDoc(SpecModel):
    """One parameter of a user check kind."""

    type: Literal["string", "integer", "number", "boolean", "list", "dict", "any"] = Field(
        default="any", description="Value type."
    )
    required: bool = Field(default=False, description="Whether a check must give it.")
    default: Any = Field(default=None, description="Value when not given.")
    description: str | None = Field(default=None, description="What it means.")


class CheckKindDoc(SpecModel):
    """`specs/checks/<id>.yaml`: a user check kind, compiled to a `command` check."""

    kind: Literal["check-kind"] = Field(description="Always `check-kind`.")
    id: str = Field(description="Kind name used as `kind:` in scenario checks.")
    description: str | None = Field(default=None, description="What checks of this kind verify.")
    params: dict[str, ParamDoc] = Field(
        default_factory=dict, description="Parameters a check of this kind accepts."
    )
    run: str = Field(description="Command template (Jinja2 over the params and `scenario`).")
    result: ResultDoc = Field(
        default_factory=ResultDoc, description="How to read the command's result (default: exit 0)."
    )
    layer: str | None = Field(default=None, description="Default layer of checks of this kind.")
    authority: str | None = Field(
        default=None, description="Named authority whose validity this kind reports."
    )
    severity: Literal["error", "warning"] | None = Field(default=None, description="Default severity.")
    timeout_s: float | None = Field(default=None, gt=0, description="Default wall-clock limit.")
    env: dict[str, str] | None = Field(default=None, description="Extra environment of the command.")
    meta: dict[str, Any] | None = Field(default=None, description="Free-form metadata.")
