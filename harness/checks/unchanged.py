"""`unchanged`: files matching `paths` (globs) are byte-identical to the seed's.

A file the seed has and the workspace lacks, one the workspace adds, and one whose
bytes differ all fail. Without a seed in the context the check cannot run (error).
"""

from __future__ import annotations

from pathlib import Path

from compiler.contract import CheckSpec
from harness.checks.base import CheckContext, CheckError, Verdict, as_list, param, walk_files
from harness.sandbox.pathsafe import glob_regex


class UnchangedCheck:
    """Protected files the agent must leave exactly as the seed had them."""

    name = "unchanged"

    def run(self, spec: CheckSpec, workspace: Path, ctx: CheckContext) -> Verdict:
        globs = [str(g) for g in as_list(param(spec, "paths", required=True))]
        if ctx.seed is None or not ctx.seed.is_dir():
            raise CheckError(f"check {spec.id!r} (unchanged) needs the seed folder, and none was given")
        regexes = [glob_regex(g) for g in globs]

        def chosen(root: Path) -> set[str]:
            return {rel for rel in walk_files(root) if any(r.match(rel) for r in regexes)}

        before, after = chosen(ctx.seed), chosen(workspace)
        if not before:
            raise CheckError(f"check {spec.id!r}: {', '.join(globs)} match no file of the seed")
        changes = [f"deleted {p}" for p in sorted(before - after)]
        changes += [f"added {p}" for p in sorted(after - before)]
        changes += [
            f"changed {p}"
            for p in sorted(before & after)
            if (ctx.seed / p).read_bytes() != (workspace / p).read_bytes()
        ]
        if changes:
            more = f" (+{len(changes) - 5} more)" if len(changes) > 5 else ""
            return Verdict(False, "; ".join(changes[:5]) + more)
        return Verdict(True, f"{len(before)} file(s) unchanged")
