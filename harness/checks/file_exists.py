"""`file-exists`: paths (or globs) exist in the workspace — or, with `exists: false`, do not."""

from __future__ import annotations

from pathlib import Path

from compiler.contract import CheckSpec
from harness.checks.base import CheckContext, CheckError, Verdict, as_list, glob_files, inside, param


class FileExistsCheck:
    """Every listed path exists (a glob: matches at least one file), or none does."""

    name = "file-exists"

    def run(self, spec: CheckSpec, workspace: Path, ctx: CheckContext) -> Verdict:
        paths = [str(p) for p in as_list(param(spec, "path", required=True))]
        if not paths:
            raise CheckError(f"check {spec.id!r} (file-exists) lists no path")
        want = bool(param(spec, "exists", True))
        present = [p for p in paths if _exists(workspace, p)]
        if want:
            missing = [p for p in paths if p not in present]
            if missing:
                return Verdict(False, f"missing: {', '.join(missing)}")
            return Verdict(True, f"present: {', '.join(paths)}")
        if present:
            return Verdict(False, f"should not exist: {', '.join(present)}")
        return Verdict(True, f"absent: {', '.join(paths)}")


def _exists(workspace: Path, path: str) -> bool:
    if any(ch in path for ch in "*?"):
        return bool(glob_files(workspace, path))
    return inside(workspace, path).exists()
