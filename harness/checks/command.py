"""`command`: run a shell command in the workspace; assess its exit status or its JSON result.

Parameters: `run` (shell string, or an argv list), `cwd` (workspace-relative, default the
workspace), `env` (extra variables), and either `exit` (an int or a list of ints, default 0)
or `result`, one reader of:

- `exit: N` (or a list) — the exit status must be one of these;
- `count: {json_path, max, min, max_param, where}` — the number of items the path reaches
  (the length of a single list or map it reaches, or a single number itself), optionally
  filtered by `where: {field: value}`, must lie in [min, max]; `max_param` names the
  check parameter holding the maximum (how a user kind passes its `max`);
- `json_path: {path, equals | matches}` — the value at the path equals a JSON value or
  matches a regex.

`result.source` is `stdout` (default) or a workspace-relative file the command writes.
A command that cannot start (exit 126/127), times out, or leaves unreadable JSON is an
`error`: the check could not assess the workspace.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from compiler.contract import CheckSpec
from harness.checks import _proc, jsonpath
from harness.checks.base import (
    CheckContext,
    CheckError,
    Verdict,
    as_list,
    inside,
    param,
    same_value,
    sandbox_cwd,
    unplace,
)

_NOT_RUNNABLE = {126: "is not executable", 127: "was not found"}


class CommandCheck:
    """A shell command whose exit status or JSON output is the verdict."""

    name = "command"

    def batchable(self, spec: CheckSpec) -> bool:
        """Whether its command may run in a batch (`harness.checks.engine`): its verdict must read
        only the command's exit status and output, not a file it leaves (a batch resets the files)."""
        result = param(spec, "result") or {}
        return not isinstance(result, Mapping) or str(result.get("source", "stdout")) == "stdout"

    def run(self, spec: CheckSpec, workspace: Path, ctx: CheckContext) -> Verdict:
        run = param(spec, "run", required=True)
        argv = [shell(), "-c", run] if isinstance(run, str) else [str(a) for a in run]
        where = str(param(spec, "cwd", "."))
        if where.startswith("/"):  # a folder only the sandbox shows (a scenario's workdir or mount)
            argv, cwd = sandbox_cwd(argv, where, ctx), workspace
        else:
            cwd = inside(workspace, where)
            if not cwd.is_dir():
                raise CheckError(f"working folder {param(spec, 'cwd')!r} does not exist in the workspace")
        if ctx.wrap is not None:
            argv = list(ctx.wrap(argv))
        timeout = ctx.timeout_for(spec)
        env = command_env(spec, workspace, ctx)
        done = ctx.run_command(argv, cwd=cwd, env=env, timeout_s=timeout)
        shown = run if isinstance(run, str) else " ".join(argv)
        if done.timed_out:
            raise CheckError(f"`{shown}` timed out after {timeout:g}s")
        if done.capped or done.exit_code is None:
            raise CheckError(f"`{shown}` printed more than {_proc.OUTPUT_CAP} bytes and was ended")
        if done.exit_code in _NOT_RUNNABLE:
            raise CheckError(
                f"`{shown}`: command {_NOT_RUNNABLE[done.exit_code]}{tail(done.stderr, workspace)}"
            )
        result: Mapping[str, Any] = param(spec, "result") or {"exit": param(spec, "exit", 0)}
        if "exit" in result:
            allowed = [int(x) for x in as_list(result["exit"])]
            if done.exit_code not in allowed:
                wanted = allowed[0] if len(allowed) == 1 else allowed
                return Verdict(
                    False,
                    f"`{shown}` exited {done.exit_code}, expected {wanted}{tail(done.stderr or done.stdout, workspace)}",
                )
            if "count" not in result and "json_path" not in result:
                return Verdict(True, f"`{shown}` exited {done.exit_code}")
        doc = _read_json(result, done, workspace, shown)
        if "count" in result:
            return _count(spec, result["count"], doc)
        if "json_path" in result:
            return _json_value(result["json_path"], doc)
        raise CheckError(
            f"check {spec.id!r}: result needs one of exit, count, json_path (got {sorted(result)})"
        )


def shell() -> str:
    """The shell that runs string commands."""
    return shutil.which("bash") or "/bin/sh"


def command_env(spec: CheckSpec, workspace: Path, ctx: CheckContext) -> dict[str, str]:
    """The environment of a check command: the base, the harness's own tools first on PATH."""
    env = dict(os.environ if ctx.env is None else ctx.env)
    # Checks are the grader's, not the agent's: they use the harness's interpreter and tools.
    own_bin = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join([*ctx.path_first, own_bin, env.get("PATH", os.defpath)])
    # A check must not change what it assesses (bytecode, lint caches) nor what a rerun sees.
    # Set where the base leaves them empty too: an empty PYTHONDONTWRITEBYTECODE means "write".
    for name, value in (("PYTHONDONTWRITEBYTECODE", "1"), ("RUFF_NO_CACHE", "true")):
        if not env.get(name):
            env[name] = value
    env["BENCH_WORKSPACE"] = str(workspace)
    if ctx.seed is not None:
        env["BENCH_SEED"] = str(ctx.seed)
    if ctx.run_dir is not None:
        env["BENCH_RUN_DIR"] = str(ctx.run_dir)
    env.update({str(k): str(v) for k, v in (param(spec, "env") or {}).items()})
    return env


def tail(text: str, workspace: Path, limit: int = 400) -> str:
    """The last few hundred characters of an output, as a message suffix.

    The workspace's path goes first: the grader's copy lives at a different place each time,
    and where the cut falls must not depend on how long that path is.
    """
    text = unplace(text, workspace).strip()
    if not text:
        return ""
    return ": " + (text if len(text) <= limit else "…" + text[-limit:])


def _read_json(result: Mapping[str, Any], done: _proc.Completed, workspace: Path, shown: str) -> Any:
    source = str(result.get("source", "stdout"))
    if source == "stdout":
        text = done.stdout
    else:
        path = inside(workspace, source)
        if not path.is_file():
            raise CheckError(
                f"`{shown}` (exit {done.exit_code}) left no result file {source}{tail(done.stderr, workspace)}"
            )
        text = path.read_text(encoding="utf-8", errors="replace")
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:  # the agent's code printed it: `[[[[...` too
        why = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
        raise CheckError(
            f"`{shown}` (exit {done.exit_code}) printed no JSON result on {source} ({why}){tail(done.stderr or text, workspace)}"
        ) from None


def _count(spec: CheckSpec, reader: Mapping[str, Any], doc: Any) -> Verdict:
    found = jsonpath.select(doc, str(reader.get("json_path", "$")))
    if len(found) == 1 and isinstance(found[0], list | dict):
        items = list(found[0].values()) if isinstance(found[0], dict) else list(found[0])
    elif len(found) == 1 and isinstance(found[0], int) and not isinstance(found[0], bool):
        items = [None] * found[0]
    else:
        items = found
    where: Mapping[str, Any] = reader.get("where") or {}
    if where:
        items = [i for i in items if isinstance(i, dict) and all(i.get(k) == v for k, v in where.items())]
    high = reader.get("max")
    if high is None and reader.get("max_param") is not None:
        high = param(spec, str(reader["max_param"]), required=True)
    low = int(reader.get("min", 0))
    n = len(items)
    if n < low:
        return Verdict(False, f"{n} found, expected at least {low}")
    if high is not None and n > int(high):
        return Verdict(False, f"{n} found, expected at most {high}: {summarise(items)}")
    return Verdict(True, f"{n} found" + ("" if high is None else f" (max {high})"))


def summarise(items: list[Any], limit: int = 3) -> str:
    """A short human line about the first findings (ruff-like records get file:line code)."""
    parts: list[str] = []
    for item in items[:limit]:
        if isinstance(item, dict) and "code" in item:
            where = Path(str(item.get("filename", "?"))).name
            row = (item.get("location") or {}).get("row", "?")
            parts.append(f"{item['code']} {where}:{row} {item.get('message', '')}".strip())
        else:
            parts.append(json.dumps(item, sort_keys=True)[:120])
    more = f" (+{len(items) - limit} more)" if len(items) > limit else ""
    return "; ".join(parts) + more


def _json_value(reader: Mapping[str, Any], doc: Any) -> Verdict:
    path = str(reader.get("path", "$"))
    found = jsonpath.select(doc, path)
    if not found:
        return Verdict(False, f"{path} is missing from the result")
    value = found[0]
    if "equals" in reader:
        if same_value(value, reader["equals"]):
            return Verdict(True, f"{path} = {json.dumps(value)}")
        return Verdict(False, f"{path} = {json.dumps(value)}, expected {json.dumps(reader['equals'])}")
    if "matches" in reader:
        text = value if isinstance(value, str) else json.dumps(value)
        if re.search(str(reader["matches"]), text):
            return Verdict(True, f"{path} matches {reader['matches']!r}")
        return Verdict(False, f"{path} = {json.dumps(value)} does not match {reader['matches']!r}")
    raise CheckError(f"json_path reader for {path} needs equals or matches")
