"""Shipping a job's project files to a worker and its run back, with no shared filesystem.

A job names project-relative files and folders (the scenario, provisioned tools, knowledge,
files, the agent's script). The client hashes each of those *trees* by content (path, kind,
exec bit, SHA-256 of the bytes), packs it once as a tar, and lets the cluster carry it: a
tree is sent to a worker once and cached on its disk under its digest, so a second matrix,
or a second trial of the same scenario, costs nothing. A worker assembles the trees a job
needs into a read-only project folder keyed by the digest of the set (`Bundle`).

Going back, a finished run directory travels as ONE archive; `install_run` unpacks it next
to its place in the run tree and renames it in, so a reader sees no run or a whole run.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import stat
import tarfile
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from compiler.contract import Job
from harness.artifacts import index
from harness.artifacts.names import RUN_FILE
from harness.artifacts.store import write_atomic
from harness.sandbox import fdtree, neutralise

_NEVER_SHIPPED = frozenset({"runs", "generated", ".git", ".nox", ".venv", "__pycache__"})
_CHUNK = 1 << 20
PROJECT_WIDE = ("specs",)
"""Project folders every job's trial reads, named or not (the grader's expectations, prices)."""


class TransportError(RuntimeError):
    """A tree or a run archive could not be shipped or installed."""


@dataclass(frozen=True)
class Tree:
    """One project-relative file or folder, identified by its content."""

    rel: str
    """Slash-separated path relative to the project root."""
    digest: str
    """SHA-256 over the sorted (path, kind, exec bit, content hash) entries."""


@dataclass(frozen=True)
class Bundle:
    """The trees one job needs; jobs with equal bundles share a project folder on a worker."""

    trees: tuple[Tree, ...]

    @property
    def digest(self) -> str:
        """Content address of the whole set."""
        text = "\n".join(f"{t.rel}\0{t.digest}" for t in self.trees)
        return hashlib.sha256(text.encode()).hexdigest()


def _walk_strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _walk_strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _walk_strings(item)


def _candidate(project: Path, text: str) -> str | None:
    """The project-relative path `text` names, when it names an existing one worth shipping."""
    text = text.strip().strip("'\"")
    if not text or len(text) > 4096 or "\n" in text or text.startswith(("/", "~", "-")):
        return None
    parts = PurePosixPath(text).parts
    if not parts or parts[0] in _NEVER_SHIPPED or ".." in parts or parts == (".",):
        return None
    try:
        return text if (project / text).exists() else None
    except OSError:
        return None


def job_paths(job: Job, project: Path) -> list[str]:
    """The project-relative paths a job may read at run time, outermost only.

    Every string of the job is considered, whole and split on whitespace, so a path named in
    an agent's arguments or a check's command travels too; a false hit only ships a file more.
    `specs/` always travels: the grader reads the project's expectation library and price
    table from it (generated/ does not: the job is the compiled scenario).
    """
    found: set[str] = {rel for rel in PROJECT_WIDE if (project / rel).is_dir()}
    for text in _walk_strings(job.model_dump(mode="json")):
        for piece in {text, *text.split()}:
            rel = _candidate(project, piece)
            if rel is not None:
                found.add(PurePosixPath(rel).as_posix())
    outer: list[str] = []
    for rel in sorted(found, key=lambda r: (len(PurePosixPath(r).parts), r)):
        if not any(PurePosixPath(rel).is_relative_to(o) for o in outer):
            outer.append(rel)
    return sorted(outer)


def _entries(root: Path) -> Iterator[tuple[str, Path]]:
    """(archive name, path) of a file or folder, sorted, symlinks not followed."""
    if not root.is_dir() or root.is_symlink():
        yield ".", root
        return
    yield ".", root
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        base = Path(dirpath)
        for name in sorted(filenames) + [d for d in dirnames if (base / d).is_symlink()]:
            path = base / name
            yield path.relative_to(root).as_posix(), path
        for name in dirnames:
            if not (base / name).is_symlink():
                yield (base / name).relative_to(root).as_posix(), base / name


def _file_sha(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def hash_tree(project: Path, rel: str) -> Tree:
    """The content address of one project-relative file or folder."""
    lines: list[str] = []
    for name, path in sorted(_entries(project / rel)):
        mode = path.lstat().st_mode
        if stat.S_ISLNK(mode):
            lines.append(f"{name}\0link\0{os.readlink(path)}")
        elif stat.S_ISDIR(mode):
            lines.append(f"{name}\0dir")
        elif stat.S_ISREG(mode):
            lines.append(f"{name}\0file\0{int(bool(mode & 0o111))}\0{_file_sha(path)}")
    return Tree(rel=rel, digest=hashlib.sha256("\n".join(lines).encode()).hexdigest())


def _normalise(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mtime = 0
    if info.isdir():
        info.mode = 0o755
    elif info.isfile():
        info.mode = 0o755 if info.mode & 0o111 else 0o644
    return info


_TOP = "t"
"""Name of a tree's root inside its archive and its cache folder (a file or a folder)."""


def _add(tar: tarfile.TarFile, path: Path, name: str, *, normalise: bool) -> None:
    info = tar.gettarinfo(str(path), arcname=name)
    if info is None:  # a socket: nothing a reader could use
        return
    if normalise:
        info = _normalise(info)
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    if info.isfile():
        with path.open("rb") as fh:
            tar.addfile(info, fh)
    elif info.isdir() or info.issym():
        tar.addfile(info)


def pack_tree(project: Path, rel: str) -> bytes:
    """A deterministic tar of one project-relative file or folder, rooted at `t`."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, path in sorted(_entries(project / rel)):
            _add(tar, path, _TOP if name == "." else f"{_TOP}/{name}", normalise=True)
    return buffer.getvalue()


_CLEARED = stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX | stat.S_IWGRP | stat.S_IWOTH
"""Mode bits never extracted: the harness unpacks as root, and the files are the agent's."""
_OUR_CHECKS = {"filter": "fully_trusted"} if hasattr(tarfile, "fully_trusted_filter") else {}
"""extractall's own filter off (where this Python has one): `_safe_members` checks every member,
the same on every Python 3.11 (3.11.2 has no filters; 3.14's default refuses absolute symlinks,
which a workspace's virtualenv holds and a local run keeps as they are)."""


def _safe_members(tar: tarfile.TarFile) -> Iterator[tarfile.TarInfo]:
    """Members that land inside the destination: no absolute names, no `..`, nothing below a link,
    no name twice (a file after a link of its name would be written through it), no setuid,
    setgid, sticky or group/other write bits. A symlink's target is kept as it is (it is data:
    nothing is written through it, and readers of a run never follow one)."""
    links: set[PurePosixPath] = set()
    seen: set[PurePosixPath] = set()
    for info in tar:
        name = PurePosixPath(info.name)
        if name.is_absolute() or ".." in name.parts:
            raise TransportError(f"archive member escapes its folder: {info.name!r}")
        if any(parent in links for parent in name.parents):
            raise TransportError(f"archive member lies below a symlink: {info.name!r}")
        if name in seen:
            raise TransportError(f"archive member appears twice: {info.name!r}")
        seen.add(name)
        if info.issym():
            links.add(name)
        elif info.islnk() or not (info.isfile() or info.isdir()):
            raise TransportError(f"archive member of unsupported type: {info.name!r}")
        info.mode &= ~_CLEARED
        yield info


def unpack(data: bytes, dest: Path, *, hold: str | None = None) -> bytes | None:
    """Unpack an archive made by `pack_tree` or `pack_run` into dest (created).

    Args:
        data: The tar.
        dest: Folder to unpack into.
        hold: Name of a top-level regular file NOT to write to disk; its bytes are returned.
    """
    dest.mkdir(parents=True, exist_ok=True)
    held: bytes | None = None
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
        members = []
        for info in _safe_members(tar):
            if hold is not None and info.name == hold and info.isfile():
                extracted = tar.extractfile(info)
                held = extracted.read() if extracted is not None else b""
            else:
                members.append(info)
        tar.extractall(dest, members=members, **_OUR_CHECKS)  # type: ignore[arg-type]
    return held


def _unique(path: Path, tag: str) -> Path:
    return path.parent / f".{path.name}.{tag}-{uuid.uuid4().hex[:12]}"


def remove_tree(path: Path) -> None:
    """Delete a folder even where a read-only copy made parts of it unwritable."""
    if not path.exists() and not path.is_symlink():
        return
    if path.is_symlink() or not path.is_dir():
        path.unlink()
        return
    for dirpath, _dirs, _files in os.walk(path):
        mode = os.lstat(dirpath).st_mode
        if not mode & stat.S_IWUSR:
            os.chmod(dirpath, mode | stat.S_IWUSR | stat.S_IXUSR)
    shutil.rmtree(path)


def cached_tree(cache: Path, tree: Tree, data: bytes) -> Path:
    """The folder holding `tree` in a worker's cache, unpacked once and renamed into place."""
    final = cache / "trees" / tree.digest
    if final.exists():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = _unique(final, "tmp")
    unpack(data, tmp)
    try:
        tmp.rename(final)
    except OSError:
        if not final.exists():
            raise
        remove_tree(tmp)  # another slot of this worker unpacked the same tree first
    return final


def materialise(cache: Path, bundle: Bundle, blobs: Mapping[str, bytes]) -> Path:
    """A project folder holding exactly the bundle's trees, shared by jobs with the same bundle.

    Files are copied, not linked, out of the tree cache, so a trial that modifies its project
    cannot corrupt the cache another project folder is built from.
    """
    final = cache / "projects" / bundle.digest
    if final.exists():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = _unique(final, "tmp")
    tmp.mkdir()
    for tree in bundle.trees:
        if tree.digest not in blobs:
            raise TransportError(f"tree {tree.rel} ({tree.digest[:12]}) was not shipped")
        source = cached_tree(cache, tree, blobs[tree.digest]) / _TOP
        target = tmp / tree.rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir() and not source.is_symlink():
            shutil.copytree(source, target, symlinks=True)
        else:
            shutil.copy2(source, target, follow_symlinks=False)
    try:
        tmp.rename(final)
    except OSError:
        if not final.exists():
            raise
        remove_tree(tmp)
    return final


def pack_run(run_dir: Path) -> bytes:
    """One archive of a run directory, symlinks kept as links, modes kept.

    The agent wrote its workspace: the walk is on directory descriptors (any depth), FIFOs,
    sockets and devices are left out unopened, and so is a path longer than `fdtree.MAX_REL`
    bytes (no client could unpack it); the grader on the client sees them absent.
    """
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for entry in neutralise.walk_tree(run_dir):
            kind = entry.kind
            if len(entry.rel) > fdtree.MAX_REL or kind not in ("dir", "file", "symlink"):
                continue
            info = tarfile.TarInfo(os.fsdecode(entry.rel))
            info.mode, info.mtime = stat.S_IMODE(entry.st.st_mode), int(entry.st.st_mtime)
            if kind == "dir":
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            elif kind == "symlink":
                info.type, info.linkname = (
                    tarfile.SYMTYPE,
                    os.fsdecode(os.readlink(entry.name, dir_fd=entry.dir_fd)),
                )
                tar.addfile(info)
            else:
                with os.fdopen(fdtree.open_regular(entry.name, entry.dir_fd), "rb") as fh:
                    info.size = os.fstat(fh.fileno()).st_size
                    tar.addfile(info, fh)
    return buffer.getvalue()


def _sweep(dest: Path) -> None:
    """Remove what an install killed halfway left beside dest."""
    for stale in dest.parent.glob(f".{dest.name}.*-*"):
        if stale.name.rsplit("-", 1)[0] in (f".{dest.name}.incoming", f".{dest.name}.old"):
            remove_tree(stale)


def install_run(data: bytes, dest: Path) -> None:
    """Put a run archive at dest so that nothing there looks finished before all of it is.

    The archive is unpacked beside dest, its run.json held in memory, and renamed into place (an
    unfinished earlier attempt is moved aside first, its run.json removed before anything
    else); run.json is then written last and atomically, the runner's own rule. A client
    killed at any point leaves an unfinished trial — rerun on resume — and never a folder
    holding a run.json next to missing artifacts. An archive without run.json is refused.
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    _sweep(dest)
    incoming = _unique(dest, "incoming")
    try:
        held = unpack(data, incoming, hold=RUN_FILE)  # run.json never touches the disk here
        if held is None:
            raise TransportError(f"run archive for {dest} has no {RUN_FILE}")
        record = held.decode("utf-8")
        json.loads(record)
        if (incoming / RUN_FILE).exists() or (incoming / RUN_FILE).is_symlink():
            raise TransportError(f"run archive for {dest} holds {RUN_FILE} twice")
    except BaseException:
        remove_tree(incoming)
        raise
    old = _unique(dest, "old")
    if dest.exists():
        (dest / RUN_FILE).unlink(missing_ok=True)
        dest.rename(old)
    incoming.rename(dest)
    write_atomic(dest / RUN_FILE, record)
    remove_tree(old)
    index.record(dest)  # the grade came with the run: the tree's index learns it here
