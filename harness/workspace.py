"""A fresh workspace per trial, its baseline, and what changed in it.

The seed is copied with `cp -a --reflink=auto`: a copy-on-write clone on filesystems that
have one (btrfs, XFS), a plain copy elsewhere. Hardlinks are never used — an agent writing
through one would change the seed for every later trial. The baseline is a git commit in a
repository kept OUTSIDE the workspace (`<run>/.assay/baseline.git`), so the agent can
neither see nor rewrite it and its own `git init` does not collide with ours.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

ANSWER_FILE = "answer.json"
_GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_AUTHOR_NAME": "assay",
    "GIT_AUTHOR_EMAIL": "assay@localhost",
    "GIT_COMMITTER_NAME": "assay",
    "GIT_COMMITTER_EMAIL": "assay@localhost",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00Z",
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LC_ALL": "C",
}


class WorkspaceError(RuntimeError):
    """The workspace could not be prepared or read back."""


@dataclass(frozen=True)
class Workspace:
    """One trial's working tree and its baseline."""

    root: Path
    git_dir: Path
    exclude: tuple[str, ...] = ()
    """Workspace-relative paths never tracked (read-only links)."""

    def add_all(self) -> None:
        # --force so the seed's own .gitignore files hide nothing from the diff.
        specs = [f":(exclude,top){p.strip('/')}" for p in self.exclude]
        self.git("add", "-A", "--force", "--", ".", *specs)

    @property
    def answer(self) -> Path:
        """Where the agent writes answer.json (always writable, checked by `answer` checks)."""
        return self.root / ANSWER_FILE

    def git(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[bytes]:
        """Run git against the baseline repository with this workspace as its work tree."""
        argv = ["git", f"--git-dir={self.git_dir}", f"--work-tree={self.root}", *args]
        done = subprocess.run(argv, cwd=self.root, env=_GIT_ENV, capture_output=True, check=False)
        if check and done.returncode != 0:
            raise WorkspaceError(f"git {' '.join(args)}: {done.stderr.decode(errors='replace').strip()}")
        return done


def copy_tree(src: Path, dest: Path) -> None:
    """Copy a folder's contents into dest (created), cheaply where the filesystem allows."""
    dest.mkdir(parents=True, exist_ok=True)
    if shutil.which("cp"):
        done = subprocess.run(
            ["cp", "-a", "--reflink=auto", f"{src}/.", str(dest)], capture_output=True, check=False
        )
        if done.returncode == 0:
            return
    shutil.copytree(src, dest, symlinks=True, dirs_exist_ok=True)


def create(seed: Path, run_dir: Path, *, exclude: Sequence[str] = ()) -> Workspace:
    """Copy the seed into `<run_dir>/workspace` (baseline comes later, after provisioning)."""
    if not seed.is_dir():
        raise WorkspaceError(f"seed folder {seed} does not exist")
    root = run_dir / "workspace"
    copy_tree(seed, root)
    return Workspace(root=root, git_dir=run_dir / ".assay" / "baseline.git", exclude=tuple(exclude))


def commit_baseline(ws: Workspace) -> None:
    """Record the workspace as it is now; later diffs are against this commit."""
    ws.git_dir.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["git", "init", "-q", "--bare", str(ws.git_dir)], env=_GIT_ENV, capture_output=True, check=True
    )
    ws.git("config", "core.bare", "false")
    ws.add_all()
    ws.git("commit", "-q", "--no-verify", "--allow-empty", "-m", "baseline")


def reset(ws: Workspace) -> None:
    """Put the workspace back to the baseline (before a retried attempt)."""
    ws.git("checkout", "-q", "-f", "HEAD", "--", ".")
    ws.git("clean", "-q", "-f", "-d", "-x", "--", ".", *[f":(exclude,top){p.strip('/')}" for p in ws.exclude])


def changes(ws: Workspace) -> list[str]:
    """Workspace-relative paths added, modified or deleted since the baseline, sorted."""
    ws.add_all()
    out = ws.git("diff", "--cached", "--name-only", "-z", "--no-renames", "HEAD").stdout
    return sorted(p for p in out.decode("utf-8", errors="surrogateescape").split("\0") if p)


def diff(ws: Workspace) -> bytes:
    """A binary-safe patch of everything changed since the baseline."""
    ws.add_all()
    return ws.git("diff", "--cached", "--binary", "--no-renames", "HEAD").stdout


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A slash-aware glob: `*` stays in one folder, `**` crosses folders, `dir/` means all below."""
    if pattern.endswith("/"):
        pattern += "**"
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def unsafe_edits(
    changed: Iterable[str], writable: Sequence[str], *, always: Sequence[str] = (ANSWER_FILE,)
) -> list[str]:
    """Changed paths that no `writable` glob (nor an always-writable file) covers."""
    patterns = [glob_regex(p) for p in writable]
    allowed = set(always)
    return [p for p in changed if p not in allowed and not any(rx.match(p) for rx in patterns)]
