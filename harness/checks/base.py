"""The check-kind plug-in point: what a kind is given and what it may say.

A check kind is a small object with a `name` and a `run(spec, workspace, ctx)`
method. It returns a `Verdict` (pass or fail, with a message) when it could assess
the workspace, raises `CheckError` when the check itself could not run (a timeout,
an unreadable result, a missing seed), and raises `CheckUnavailable` when what it
needs is absent by design (no transcript, no judge provider): unavailable is never
a pass.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, NamedTuple, Protocol

from compiler.contract import CheckSpec, ScenarioJob
from harness.artifacts.records import CaseOutcome
from harness.checks import _proc
from harness.sandbox.batch_warm import Servers
from harness.sandbox.pathsafe import PathEscape, glob_regex, is_inside, resolve_inside

Wrapper = Callable[[Sequence[str]], Sequence[str]]
"""Turns the argv of a check's command into the argv that runs it confined."""


class Runner(Protocol):
    """Runs a check's command (argv already wrapped): `harness.checks._proc.run_command`'s shape."""

    def __call__(
        self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], timeout_s: float, namespaces: bool
    ) -> _proc.Completed: ...


class CheckError(Exception):
    """The check itself could not run; its outcome is `error`."""


class CheckUnavailable(Exception):
    """What the check needs is absent by design; its outcome is `unavailable`."""


class Verdict(NamedTuple):
    """A kind's verdict on one workspace."""

    passed: bool
    message: str = ""
    tests: tuple[CaseOutcome, ...] = ()
    """One outcome per test, for a kind that runs a test suite."""


@dataclass(frozen=True)
class CheckContext:
    """Everything a check may need besides the workspace itself.

    Attributes:
        seed: The scenario's untouched seed folder (for `unchanged`), if known.
        run_dir: The run directory (for the kinds that read a run), if any.
        scenario: The scenario as compiled, for kinds that need its entry or watch list.
        env: The base environment of check commands; None inherits the harness's own.
        timeout_s: A cap on every check's own timeout, or None.
        wrap: An isolation wrapper applied to every check command's argv, or None.
        answer_file: Where the agent's answer.json is (default: `answer.json` in the workspace).
        sandboxed: `wrap` puts every command in a sandbox that is its own pid and network
            namespace (bwrap, unshare): the process wrapper adds no namespaces of its own.
        extra: Free-form values for out-of-tree kinds.
        path_first: Folders before everything else on the PATH of check commands.
    """

    seed: Path | None = None
    run_dir: Path | None = None
    scenario: ScenarioJob | None = None
    env: Mapping[str, str] | None = None
    timeout_s: float | None = None
    wrap: Wrapper | None = None
    answer_file: Path | None = None
    sandboxed: bool = False
    extra: Mapping[str, Any] = field(default_factory=dict)
    path_first: tuple[str, ...] = ()
    """Folders put first on the PATH of check commands, before the harness's own tools (a
    scenario environment's `bin`: the interpreter and packages its tests need)."""
    runner: Runner | None = None
    """Runs the check's command instead of a process of its own (the engine's batch: a command
    already run, or recording one to run); None runs it here."""
    servers: Servers | None = None
    """Batch servers kept across runs (a grading session's, `harness.grade.session`): the commands
    of a run go to a warm one; None starts a sandbox per batch."""
    snapshot_dir: Path | None = None
    """A grading session's folder on the workspace's filesystem: the snapshot pass keeps the graded
    workspace's entries there while it puts the snapshots' states in the workspace's own folder,
    which the session's warm server serves; None: the pass copies the workspace to a temporary one."""

    def run_command(
        self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], timeout_s: float
    ) -> _proc.Completed:
        """Run a check's command (argv already wrapped by `wrap`) to its end or its timeout."""
        run = self.runner or _proc.run_command
        return run(argv, cwd=cwd, env=env, timeout_s=timeout_s, namespaces=not self.sandboxed)

    def timeout_for(self, spec: CheckSpec) -> float:
        """The effective timeout of one check."""
        if self.timeout_s is None:
            return spec.timeout_s
        return min(spec.timeout_s, self.timeout_s)


class CheckKind(Protocol):
    """One kind of check, chosen by name from the registry."""

    name: str

    def run(self, spec: CheckSpec, workspace: Path, ctx: CheckContext) -> Verdict:
        """Assess the workspace; raise CheckError / CheckUnavailable when it cannot."""
        ...


def param(spec: CheckSpec, name: str, default: Any = None, *, required: bool = False) -> Any:
    """A kind parameter, raising CheckError when a required one is missing."""
    if name in spec.params:
        return spec.params[name]
    if required:
        raise CheckError(f"check {spec.id!r} ({spec.kind}) needs the parameter {name!r}")
    return default


def as_list(value: Any) -> list[Any]:
    """A scalar or a list, as a list (None is empty)."""
    if value is None:
        return []
    if isinstance(value, list | tuple):
        return list(value)
    return [value]


def sandbox_cwd(argv: list[str], cwd: str, ctx: CheckContext) -> list[str]:
    """argv that enters an absolute folder inside the sandbox first (a scenario's workdir or mount,
    which exists only there); CheckError without a sandbox."""
    if ctx.wrap is None:
        raise CheckError(
            f"working folder {cwd!r} exists only inside the sandbox, and this check runs without one"
        )
    return ["/bin/sh", "-c", 'cd "$0" && exec "$@"', cwd, *argv]


def inside(workspace: Path, relative: str) -> Path:
    """A workspace-relative path, refusing one that escapes the workspace."""
    pure = PurePosixPath(relative)
    if pure.is_absolute() or ".." in pure.parts:
        raise CheckError(f"path {relative!r} must be relative to the workspace and stay inside it")
    if not [part for part in pure.parts if part != "."]:
        return workspace
    try:  # a symlink the agent planted must not make a check read a file outside (the reference)
        return resolve_inside(workspace, pure.as_posix(), allow_final_symlink=True)
    except PathEscape as exc:
        raise CheckError(str(exc)) from exc


def walk_files(root: Path) -> list[str]:
    """Every file under root as a sorted slash-separated relative path (symlinks count as files)."""
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        base = Path(dirpath).relative_to(root)
        dirnames.sort()
        for name in filenames:
            found.append((base / name).as_posix())
    return sorted(found)


def glob_files(root: Path, pattern: str) -> list[Path]:
    """Files under root matching a workspace-relative glob, sorted."""
    pure = PurePosixPath(pattern)
    if pure.is_absolute() or ".." in pure.parts:
        raise CheckError(f"glob {pattern!r} must be relative to the workspace and stay inside it")
    if not any(ch in pattern for ch in "*?"):
        path = root.joinpath(*pure.parts)
        return [path] if path.is_file() and is_inside(root, path) else []
    regex = glob_regex(pure.as_posix())
    # Symlinks out of the workspace are left out: their targets are not the agent's work.
    return [root / rel for rel in walk_files(root) if regex.match(rel) and is_inside(root, root / rel)]


def same_value(value: Any, expected: Any) -> bool:
    """JSON equality as a person means it: strings compare stripped, a bool never equals a number."""
    if isinstance(value, str) and isinstance(expected, str):
        return value.strip() == expected.strip()
    if isinstance(value, bool) or isinstance(expected, bool):
        return value is expected
    return bool(value == expected)


def unplace(text: str, folder: Path) -> str:
    """Text with a grading copy's path replaced by `$WORKSPACE` (it differs on every grading)."""
    for form in sorted({str(folder.resolve()), str(folder)}, key=len, reverse=True):
        text = text.replace(form, "$WORKSPACE")
    return text
