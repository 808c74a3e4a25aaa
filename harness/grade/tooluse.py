"""Tool use and friction, derived from trace.jsonl (and the snapshot times, for repeats).

Definitions (generalised from seed 000's wrightUse and friction):
- a failure is an invocation that exited non-zero or never exited;
- a usage error exits 2 (the argparse/click/clap convention for bad usage);
- an unknown subcommand is a usage error whose stderr says so (unknown / invalid choice /
  unrecognized / no such command), or, when stderr was not captured, whose subcommand
  never exited other than 2 anywhere in the run;
- a help lookup passes -h / --help or runs `help`;
- a retry after a failure runs the same command and subcommand right after it failed;
- an identical repeat runs exactly the previous command line again with no write between;
- a malformed serve request is a line sent into a serve session that is not JSON, or one
  the tool refused as an invalid request (JSON-RPC -32600).
Output tokens are estimated at four bytes a token; provider usage stays authoritative.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Sequence

from harness.artifacts.grade_sections import Friction, NotableExit, SubcommandUse, ToolUse
from harness.artifacts.readers import Invocation, Trace

BYTES_PER_TOKEN = 4
USAGE_EXIT = 2
_UNKNOWN = re.compile(
    r"unknown (sub)?command|invalid choice|unrecogni[sz]ed (sub)?command|no such (sub)?command", re.I
)
_HELP = frozenset({"-h", "--help"})


def tokens(nbytes: int) -> int:
    """Estimated tokens of an output of nbytes."""
    return math.ceil(nbytes / BYTES_PER_TOKEN)


def _key(call: Invocation) -> str:
    return f"{call.command} {call.subcommand}" if call.subcommand else call.command


def _failed(call: Invocation) -> bool:
    return call.exit != 0


def tool_use(trace: Trace, notable: Sequence[int]) -> ToolUse:
    """Invocations by subcommand, failures, notable exits, estimated output tokens."""
    groups: dict[str, list[Invocation]] = {}
    for call in trace.invocations:
        groups.setdefault(_key(call), []).append(call)
    by_sub = {}
    for key, calls in sorted(groups.items()):
        out = sum(c.out_bytes for c in calls)
        exits = Counter("none" if c.exit is None else str(c.exit) for c in calls)
        by_sub[key] = SubcommandUse(
            invocations=len(calls),
            failures=sum(1 for c in calls if _failed(c)),
            exits=dict(sorted(exits.items())),
            output_bytes=out,
            est_output_tokens=tokens(out),
        )
    marked = set(notable)
    sessions = {line.session for line in trace.serve}
    return ToolUse(
        present=trace.present,
        invocations=len(trace.invocations),
        failures=sum(1 for c in trace.invocations if _failed(c)),
        by_subcommand=by_sub,
        notable_exits=tuple(
            NotableExit(index=c.index, argv=c.argv, exit=c.exit)
            for c in trace.invocations
            if c.exit is not None and c.exit in marked
        ),
        est_output_tokens=sum(u.est_output_tokens for u in by_sub.values()),
        serve_sessions=len(sessions),
        serve_requests=sum(1 for line in trace.serve if line.direction == "in"),
        malformed_rows=trace.malformed_rows,
    )


def friction(trace: Trace, writes: Sequence[float]) -> Friction:
    """Usage errors, unknown subcommands, help lookups, retries, malformed requests, repeats."""
    calls = trace.invocations
    ok_subs = {(c.command, c.subcommand) for c in calls if c.exit not in (USAGE_EXIT, None)}
    usage = [c for c in calls if c.exit == USAGE_EXIT]
    unknown = sum(
        1
        for c in usage
        if (_UNKNOWN.search(c.stderr) if c.stderr else (c.command, c.subcommand) not in ok_subs)
    )
    helps = sum(1 for c in calls if _HELP & set(c.args) or c.subcommand == "help")
    retries = repeats = 0
    streak = longest = 0
    last: dict[str, Invocation] = {}
    for call in calls:
        prev = last.get(call.command)
        if prev is not None:
            if _failed(prev) and prev.subcommand == call.subcommand:
                retries += 1
            wrote_between = any(prev.t < w <= call.t for w in writes)
            if prev.argv == call.argv and not wrote_between:
                repeats += 1
        if _failed(call):
            streak = streak + 1 if prev is not None and prev.argv == call.argv and _failed(prev) else 1
            longest = max(longest, streak)
        last[call.command] = call
    return Friction(
        usage_errors=len(usage),
        unknown_subcommands=unknown,
        help_lookups=helps,
        retries_after_failure=retries,
        malformed_serve_requests=_malformed_serve(trace),
        identical_repeats=repeats,
        repeated_failures=longest,
    )


def _malformed_serve(trace: Trace) -> int:
    bad = 0
    for line in trace.serve:
        if not line.line.strip():
            continue
        try:
            msg = json.loads(line.line)
        except json.JSONDecodeError:
            bad += line.direction == "in"
            continue
        # A parse error (-32700) answers a non-JSON line, already counted on its way in.
        if line.direction == "out" and isinstance(msg, dict):
            error = msg.get("error")
            if isinstance(error, dict) and error.get("code") == -32600:
                bad += 1
    return bad
