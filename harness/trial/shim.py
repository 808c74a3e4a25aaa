"""The tracing shim: every invocation of a provided tool, recorded into trace.jsonl.

For each executable of the cell's PATH folders (and each extra name in `trace`) the runner
writes a small stand-alone Python script of the same name into the trial's shim folder,
which goes first on the agent's PATH. The script runs the real executable, forwards its
stdin/stdout/stderr, and appends one JSON line per invocation: argv, exit code, duration and
output bytes. A subcommand listed in `serve` starts a long-lived session: every line the
agent sends and every line the tool answers is appended as it passes. The script needs only
the standard library (`python -IS`), so it works inside a sandbox that sees no project.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

_TEMPLATE = r"""#!{python} -IS
import json, os, subprocess, sys, threading, time
REAL = {real!r}
NAME = {name!r}
TRACE = {trace!r}
SERVE = {serve!r}

def emit(row):
    fd = os.open(TRACE, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (json.dumps(row, sort_keys=True) + "\n").encode())
    finally:
        os.close(fd)

def pump(src, dst, counter, key, session=None, direction=None):
    while True:
        data = src.readline() if session is not None else src.read1(65536)
        if not data:
            break
        counter[key] += len(data)
        if session is not None:
            emit({{"t": time.time(), "tool": NAME, "session": session, "dir": direction,
                   "line": data.decode("utf-8", "replace").rstrip("\n")}})
        try:
            dst.write(data)
            dst.flush()
        except (OSError, ValueError):
            break
    if session is not None and direction == "in":
        try:
            dst.close()
        except OSError:
            pass

def main():
    args = sys.argv[1:]
    serve = bool(args) and (args[0] in SERVE or NAME + " " + args[0] in SERVE)
    session = "%d-%d" % (os.getpid(), int(time.time() * 1000)) if serve else None
    start = time.time()
    counter = {{"stdout": 0, "stderr": 0, "stdin": 0}}
    try:
        proc = subprocess.Popen([REAL] + args, stdin=subprocess.PIPE if serve else None,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as exc:
        emit({{"t": start, "tool": NAME, "argv": [NAME] + args, "exit": 127, "duration_s": 0.0,
              "stdout_bytes": 0, "stderr_bytes": 0, "output_bytes": 0, "error": str(exc)}})
        sys.stderr.write("%s: %s\n" % (NAME, exc))
        return 127
    threads = [
        threading.Thread(target=pump, args=(proc.stdout, sys.stdout.buffer, counter, "stdout", session, "out")),
        threading.Thread(target=pump, args=(proc.stderr, sys.stderr.buffer, counter, "stderr")),
    ]
    if serve:
        threads.append(threading.Thread(target=pump, args=(sys.stdin.buffer, proc.stdin, counter, "stdin", session, "in"), daemon=True))
    for th in threads:
        th.start()
    try:
        code = proc.wait()
    except KeyboardInterrupt:
        proc.terminate()
        code = proc.wait()
    for th in threads[:2]:
        th.join()
    row = {{"t": start, "tool": NAME, "argv": [NAME] + args, "exit": code,
           "duration_s": round(time.time() - start, 6), "stdout_bytes": counter["stdout"],
           "stderr_bytes": counter["stderr"], "output_bytes": counter["stdout"] + counter["stderr"],
           "cwd": os.getcwd()}}
    if session is not None:
        row["session"] = session
    emit(row)
    return code if code >= 0 else 128 - code

if __name__ == "__main__":
    sys.exit(main())
"""


def _executables(folder: Path) -> Iterable[Path]:
    if not folder.is_dir():
        return
    for entry in sorted(folder.iterdir()):
        if entry.is_file() and os.access(entry, os.X_OK):
            yield entry


def write_shim(shim_bin: Path, name: str, real: Path, *, trace: Path, serve: Sequence[str]) -> Path:
    """Write one shim script named `name` that traces `real`."""
    shim_bin.mkdir(parents=True, exist_ok=True)
    target = shim_bin / name
    text = _TEMPLATE.format(
        python=sys.executable, real=str(real), name=name, trace=str(trace), serve=tuple(serve)
    )
    target.write_text(text, encoding="utf-8")
    target.chmod(0o755)
    return target


def install(
    shim_bin: Path,
    *,
    path_dirs: Sequence[Path],
    trace_names: Sequence[str],
    serve: Sequence[str],
    trace_file: Path,
    search_path: str,
) -> dict[str, Path]:
    """Shim every executable of `path_dirs` and every name in `trace_names`.

    Args:
        shim_bin: The folder that goes first on the agent's PATH.
        path_dirs: Absolute folders the cell puts on PATH (earlier ones win).
        trace_names: More command names to trace, looked up in the path folders, then `search_path`.
        serve: Subcommands that start a line-by-line session.
        trace_file: trace.jsonl.
        search_path: Where traced names outside the path folders are looked up.

    Returns:
        Shimmed name -> the real executable.
    """
    shim_bin.mkdir(parents=True, exist_ok=True)
    found: dict[str, Path] = {}
    for folder in path_dirs:
        for exe in _executables(folder):
            found.setdefault(exe.name, exe.resolve())
    for name in trace_names:
        if name not in found:
            located = shutil.which(name, path=search_path)
            if located is not None:
                found[name] = Path(located).resolve()
    for name, real in found.items():
        write_shim(shim_bin, name, real, trace=trace_file, serve=serve)
    return found
