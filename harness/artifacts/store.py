"""Atomic writes and schema-checked reads: how every record reaches and leaves the disk.

A reader sees a record's old content or its new content, never half of it, and a record
written by a newer assay is refused with a message that says so rather than misread. The
project's own YAML files that trials and grades read (`read_plain`) are parsed once per version.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel


class FutureSchemaError(ValueError):
    """A record written by a newer assay than this one."""


M = TypeVar("M", bound=BaseModel)
_LOADER: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_plain(path: Path) -> Any:
    """A YAML file read at run time (a scripted agent's script, a price table, an expectation) as
    `yaml.safe_load` reads it, with libyaml where it is installed, and parsed once per version of
    the file: a matrix reads the same few files for every trial, and parsing them in pure Python
    had cost a trial more than its agent. The caller gets its own copy."""
    st = path.stat()
    return copy.deepcopy(_plain_file(path.resolve(), st.st_mtime_ns, st.st_size))


@functools.lru_cache(maxsize=64)
def _plain_file(path: Path, mtime_ns: int, size: int) -> Any:
    return yaml.load(path.read_text(encoding="utf-8"), Loader=_LOADER)


def write_atomic(path: Path, text: str, *, durable: bool = True) -> None:
    """Write a file so a reader sees the old content or the new, never half.

    `durable=False` leaves out the fsync (a wait on the disk of several milliseconds): for a
    file that a crash of the machine may lose without harm, because it is restored or
    rewritten (a run's job.json: `harness.artifacts.run_tree.read_job`)."""
    staged = _stage(path, (text,), durable=durable)
    try:
        os.replace(staged, path)
    except BaseException:
        staged.unlink(missing_ok=True)
        raise


def _stage(path: Path, chunks: Iterable[str], *, durable: bool) -> Path:
    """chunks written to a new hidden file beside path (removed again if writing fails)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o644)  # mkstemp's 0600 would hide records from every other reader
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            for chunk in chunks:
                fh.write(chunk)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        if exc.filename is None:  # a write or close names no file: say whose content did not fit
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Path(tmp)


class Staged:
    """Files written beside their targets under hidden names, then put in place together (`commit`:
    each renamed over its target, so a reader sees the old file or the new, never half) or thrown
    away (`discard`). Not fsync'ed: for outputs that running their command again rewrites (a
    report), where waiting on the disk for tens of megabytes buys nothing."""

    def __init__(self) -> None:
        self.files: list[tuple[Path, Path]] = []
        """(staged file, target) in the order written."""

    def write(self, path: Path, chunks: Iterable[str]) -> None:
        """Stage path's new content, written a chunk at a time (never joined in memory)."""
        self.files.append((_stage(path, chunks, durable=False), path))

    def commit(self) -> list[Path]:
        """Put every staged file in place; the targets, in the order written."""
        for staged, path in self.files:
            os.replace(staged, path)
        done = [path for _staged, path in self.files]
        self.files = []
        return done

    def discard(self) -> None:
        """Remove every staged file not yet in place."""
        for staged, _path in self.files:
            staged.unlink(missing_ok=True)
        self.files = []


def read_file(path: Path | str) -> tuple[bytes, os.stat_result]:
    """A record's bytes and the stat of what was read.

    Something other than a file where a record belongs (a folder named run.json, a FIFO, a
    device) is a damaged record, a ValueError: never a read that fails as a bug or blocks."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # a FIFO opens without a writer
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError(f"{path}: not a file (a {_kind(st.st_mode)} has its name)")
    except BaseException:
        os.close(fd)
        raise
    with os.fdopen(fd, "rb") as fh:
        return fh.read(), st


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "folder"
    return "FIFO" if stat.S_ISFIFO(mode) else "special file"


def write_record(path: Path, record: BaseModel) -> None:
    """Serialise a record as sorted, indented JSON, atomically."""
    data = record.model_dump(mode="json")
    write_atomic(path, json.dumps(data, indent=2, sort_keys=True) + "\n")


def read_record(path: Path, model: type[M], current: int) -> M:
    """Read a record, refusing one from a newer schema with a clear message.

    Raises:
        FutureSchemaError: the record comes from a newer assay.
        ValueError: not a record (not JSON, not a JSON object, or not valid for the model): damaged.
        OSError: it cannot be read (missing, a directory, no permission).
    """
    data = json.loads(read_file(path)[0].decode("utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a record (a JSON object is expected, found {type(data).__name__})")
    version = data.get("schema_version", 0)
    if isinstance(version, int) and version > current:
        raise FutureSchemaError(
            f"{path}: schema_version {version} is newer than this assay understands ({current}); upgrade assay"
        )
    return model.model_validate(data)
