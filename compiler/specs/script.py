"""A scripted agent's script (docs/scripted-agent.md), checked at compile time.

The runner inlines the script into the job's agent arguments and `adapters/scripted.py`
interprets it; a malformed one would fail every trial of the agent, so its shape is a
spec error here, at its line. The actions are the adapter's `ACTIONS` (a test keeps the two
in step); a step names exactly one of them (`compiler.agentargs`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from compiler.specs.base import SpecModel

Names = str | list[str]
Probability = float | str
"""A number, or `$name`: the agent argument of that name."""


class WhenDoc(SpecModel):
    """A step's condition: every clause holds."""

    on_path: Names | None = Field(default=None, description="Commands that resolve on the agent's PATH.")
    not_on_path: Names | None = Field(default=None, description="Commands that do not.")
    level: dict[str, str] | None = Field(default=None, description="Factor -> the cell's level.")
    env: dict[str, Any] | None = Field(default=None, description="Variable -> its value.")
    file_exists: Names | None = Field(default=None, description="Workspace files that exist.")
    trace_has: Names | None = Field(default=None, description="Tools the trace records so far.")
    last_exit: int | None = Field(default=None, description="Exit status of the last run or edit.")
    scenario: Names | None = Field(default=None, description="Scenario ids.")
    chance: Probability | None = Field(default=None, description="Probability of a seeded draw.")
    not_: WhenDoc | None = Field(default=None, alias="not", description="A condition that does not hold.")


class FileTextDoc(SpecModel):
    """`write` / `append`: a file and its text."""

    path: str = Field(description="Workspace file.")
    content: str | None = Field(default=None, description="Text written (default empty).")


class EditDoc(SpecModel):
    """`edit`: replace a text in a file."""

    path: str = Field(description="Workspace file.")
    old: str = Field(description="Text replaced.")
    new: str | None = Field(default=None, description="Replacement (default empty).")
    count: int | None = Field(default=None, ge=0, description="Replacements (default 1).")


class AskDoc(SpecModel):
    """`ask`: one model request."""

    text: str | None = Field(default=None, description="The request's text.")
    on_error: Literal["stop", "continue"] | None = Field(
        default=None, description="After an error answer: stop (default) or continue."
    )


class ChoiceDoc(SpecModel):
    """One branch of `choose`."""

    weight: Probability | None = Field(default=None, description="Relative weight (default 1).")
    steps: list[StepDoc] | None = Field(default=None, description="Steps of the branch.")


class RepeatDoc(SpecModel):
    """`repeat`: steps run again and again."""

    times: int | Literal["forever"] | None = Field(default=None, description="Runs (default forever).")
    steps: list[StepDoc] | None = Field(default=None, description="Steps repeated.")


class StepDoc(SpecModel):
    """One step: exactly one action, and an optional condition."""

    when: WhenDoc | None = Field(default=None, description="Run the step only when this holds.")
    run: str | None = Field(default=None, description="Shell command.")
    write: FileTextDoc | None = Field(default=None, description="Write a file.")
    append: FileTextDoc | None = Field(default=None, description="Append to a file.")
    edit: EditDoc | None = Field(default=None, description="Replace text in a file.")
    delete: str | None = Field(default=None, description="Remove a file.")
    answer: dict[str, Any] | None = Field(default=None, description="Keys merged into answer.json.")
    read_trace: Any = Field(default=None, description="Read the trace (any value).")
    say: str | int | float | None = Field(default=None, description="Print and record a message.")
    sleep: float | None = Field(default=None, ge=0, description="Seconds to wait.")
    choose: list[ChoiceDoc] | None = Field(default=None, description="Pick one branch at random.")
    exit: int | None = Field(default=None, description="Stop with this exit code.")
    ask: str | AskDoc | None = Field(default=None, description="One model request.")
    repeat: RepeatDoc | None = Field(default=None, description="Run steps repeatedly.")


ChoiceDoc.model_rebuild()
RepeatDoc.model_rebuild()

ACTIONS = tuple(name for name in StepDoc.model_fields if name != "when")
"""The actions a step may name (adapters/scripted.py ACTIONS)."""


class ScriptDoc(SpecModel):
    """A script: steps for every scenario, or per scenario."""

    seed: int | str | None = Field(default=None, description="Mixed into every random draw.")
    steps: list[StepDoc] | None = Field(default=None, description="Steps of a scenario without its own.")
    scenarios: dict[str, list[StepDoc]] | None = Field(
        default=None, description="Scenario id (or `default`) -> its steps."
    )
