"""Strict validity of every snapshot of the entry, by the scenario's authority.

Each snapshot is assessed in a scratch copy of the graded workspace whose watched files
hold their content as of that snapshot (files not yet written keep the seed's content
when the project is known, else the final one). Identical states are assessed once. In a grading
session the copy is made in the workspace's own folder, its entries kept aside meanwhile, so the
session's warm server for that folder serves this pass too (`CheckContext.snapshot_dir`).
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from compiler.contract import CheckSpec
from harness.artifacts.grade_sections import SnapshotVerdict
from harness.artifacts.readers import SNAPSHOT_MAX
from harness.artifacts.records import CheckOutcome
from harness.artifacts.run_view import RunView
from harness.checks.base import CheckContext, CheckError
from harness.checks.engine import scrub_outcome
from harness.sandbox import fdtree, neutralise
from harness.sandbox.identity import hand_over
from harness.sandbox.pathsafe import clear_way

FINAL_OUTCOMES = "final-outcomes"
"""view.cache key: the main pass's outcomes by check id (the final workspace's verdicts)."""
RUN_KINDS = frozenset({"trace", "events", "transcript", "snapshot", "judge"})


def validity_checks(view: RunView, params: Mapping[str, Any]) -> tuple[str, tuple[CheckSpec, ...]]:
    """What decides a snapshot's validity: a `run` command, a named authority, or the scenario's first."""
    if params.get("run"):
        spec = CheckSpec(
            id="snapshot-validity",
            kind="command",
            params={"run": params["run"], "exit": params.get("exit", 0)},
            timeout_s=float(params.get("timeout_s", 60.0)),
        )
        return f"run: {params['run']}", (spec,)
    name = params.get("authority")
    if name is None:
        name = next((c.authority for c in view.checks if c.authority and c.kind not in RUN_KINDS), None)
        if name is None:
            return "", ()
    deciders = tuple(c for c in view.checks if c.authority == name and c.kind not in RUN_KINDS)
    if not deciders:
        raise CheckError(f"no check of the scenario reports for authority {name!r}")
    return str(name), deciders


def watched(view: RunView) -> tuple[str, ...]:
    """The files snapshotted after each write."""
    scenario = view.job.scenario
    return tuple(scenario.watch or scenario.entry or sorted({s.path for s in view.snapshots}))


def validity(
    view: RunView, label: str, deciders: Sequence[CheckSpec], workspace: Path, ctx: CheckContext
) -> tuple[SnapshotVerdict, ...]:
    """One verdict per snapshot (cached on the view for the rest of the grading pass)."""
    key = "snapshot-validity:" + label
    if key in view.cache:
        cached: tuple[SnapshotVerdict, ...] = view.cache[key]
        return cached
    from harness.checks.engine import run_checks

    paths = watched(view)
    with _copy_of(workspace, ctx.snapshot_dir) as tree:
        state: dict[str, bytes | None] = {}
        unknown: dict[str, str] = {}  # watched files whose current version was not kept, and why
        for rel in paths:
            seeded = view.seed / rel if view.seed is not None else None
            final = tree / rel  # the graded workspace's content (read before any state is put there)
            source = seeded if seeded is not None and seeded.is_file() else final
            state[rel] = _content(source)
            if state[rel] == _LARGE:
                unknown[rel] = f"larger than {SNAPSHOT_MAX:,} bytes"
        memo: dict[str, tuple[bool | None, str]] = {}
        # The state equal to the final workspace was assessed by the main pass already.
        known: dict[str, CheckOutcome] = view.cache.get(FINAL_OUTCOMES, {})
        final_state = {rel: _content(tree / rel) for rel in paths}  # before any state is put there
        if all(d.id in known for d in deciders) and _LARGE not in final_state.values():
            memo[_digest(final_state)] = _verdict([known[d.id] for d in deciders])
        verdicts: list[SnapshotVerdict] = []
        for snap in view.snapshots:
            stored = snap.file
            if snap.omitted is not None:
                unknown[snap.path] = snap.omitted
            else:
                unknown.pop(snap.path, None)
                state[snap.path] = stored.read_bytes() if stored is not None and stored.is_file() else None
            digest = _digest(state)
            if unknown:  # a state nobody can rebuild is not assessed: neither valid nor invalid
                valid, message = (
                    None,
                    "; ".join(f"{p}: version not kept ({w})" for p, w in sorted(unknown.items())),
                )
            else:
                if digest not in memo:
                    _materialise(tree, state)
                    if ctx.snapshot_dir is not None:
                        hand_over(tree)  # a warm server's sandbox hands nothing over as it starts
                    memo[digest] = _verdict([scrub_outcome(o, tree) for o in run_checks(deciders, tree, ctx)])
                valid, message = memo[digest]
            verdicts.append(
                SnapshotVerdict(index=snap.index, t=snap.t, path=snap.path, valid=valid, message=message)
            )
    result = tuple(verdicts)
    view.cache[key] = result
    return result


@contextlib.contextmanager
def _copy_of(workspace: Path, aside: Path | None) -> Iterator[Path]:
    """A copy of the graded workspace to put the snapshots' states in: with `aside` (a grading
    session's empty folder on the workspace's filesystem), in the workspace's own folder, which the
    session's warm server serves, its entries moved aside meanwhile and back after; else (or when
    that filesystem cannot hold the whole copy) in a temporary folder."""
    if aside is not None:
        neutralise.empty_tree(aside)
        _move_entries(workspace, aside)
        try:
            whole = not fdtree.copy_tree(aside, workspace)
            if whole:
                hand_over(workspace)
                yield workspace
        finally:
            neutralise.empty_tree(workspace)
            _move_entries(aside, workspace)
        if whole:
            return
    scratch = Path(tempfile.mkdtemp(prefix="assay-snap-"))
    try:
        fdtree.copy_tree(workspace, scratch / "ws")  # the grader's copy: odd files already left out
        yield scratch / "ws"
    finally:
        neutralise.remove_tree(scratch, ignore_errors=True)


def _move_entries(src: Path, dest: Path) -> None:
    """Rename every entry of src into the empty folder dest (the same filesystem: nothing is copied)."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    src_fd, dest_fd = os.open(src, flags), os.open(dest, flags)
    try:
        for name in os.listdir(src_fd):
            os.rename(name, name, src_dir_fd=src_fd, dst_dir_fd=dest_fd)
    finally:
        os.close(src_fd)
        os.close(dest_fd)


def _digest(state: Mapping[str, bytes | None]) -> str:
    return hashlib.sha256(repr(sorted(state.items())).encode()).hexdigest()


_LARGE = b"\0larger than SNAPSHOT_MAX"
"""Stands for a file too large to hold in a state (never materialised: its state is not assessed)."""


def _content(path: Path) -> bytes | None:
    if not path.is_file():
        return None
    return _LARGE if path.stat().st_size > SNAPSHOT_MAX else path.read_bytes()


def _verdict(outcomes: Sequence[CheckOutcome]) -> tuple[bool | None, str]:
    message = "; ".join(f"{o.id}: {o.message}" for o in outcomes if o.outcome != "pass")
    if all(o.outcome == "pass" for o in outcomes):
        return True, ""
    if any(o.outcome in ("error", "unavailable") for o in outcomes):
        return None, message
    return False, message


def _materialise(tree: Path, state: Mapping[str, bytes | None]) -> None:
    for rel, data in state.items():
        target = clear_way(tree, rel)
        if data is not None:
            target.write_bytes(data)


def summarise(verdicts: Sequence[SnapshotVerdict]) -> tuple[int | None, tuple[int, ...]]:
    """First valid index and the indices of valid-to-invalid regressions."""
    first = next((v.index for v in verdicts if v.valid), None)
    regressions = tuple(
        cur.index for prev, cur in itertools.pairwise(verdicts) if prev.valid is True and cur.valid is False
    )
    return first, regressions
