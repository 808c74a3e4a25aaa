"""Running an agent CLI: how to launch it, its version, a run with stdout lines stamped as they
arrive, and ending its whole process tree.

No timeout here: the runner owns the limits and kills the sandbox; an adapter only cuts off a
CLI that retries a provider failure forever (`run_cli(retry_line=..., max_retries=...)`).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def launch_argv(binary: Path) -> list[str]:
    """How to start the CLI: a pip-venv script through its venv's python (its shebang names the
    install path, which a sandbox may mount elsewhere), anything else directly."""
    python = binary.parent / "python"
    try:
        with binary.open("rb") as fh:
            first = fh.readline(200)
    except OSError:
        return [str(binary)]
    if python.exists() and first.startswith(b"#!") and b"python" in first:
        return [str(python), str(binary)]
    return [str(binary)]


def cli_version(binary: Path, env: dict[str, str], flag: str = "--version") -> str | None:
    """The first version-looking token the CLI prints for `--version`."""
    try:
        done = subprocess.run(
            [*launch_argv(binary), flag],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r"\d+\.\d+(?:\.\d+)?(?:[-.+\w]*)?", done.stdout + done.stderr)
    return match.group(0) if match else None


@dataclass
class Run:
    """A finished CLI run: exit code and stdout lines stamped with their arrival time."""

    returncode: int
    lines: list[tuple[float, str]] = field(default_factory=list)
    stderr: str = ""
    retries: int = 0
    """Failed provider attempts the CLI reported (stdout or stderr lines matching `retry_line`)."""
    stopped: bool = False
    """Whether it was stopped for retrying more than `max_retries` times."""


def run_cli(
    argv: list[str],
    *,
    env: dict[str, str],
    cwd: Path,
    stdin: str | None,
    log_dir: Path,
    name: str,
    retry_line: re.Pattern[str] | None = None,
    max_retries: int = 0,
) -> Run:
    """Run the CLI, tee stdout to `<log_dir>/<name>.stdout` line by line with arrival times,
    stderr to `<name>.stderr`. Every stdout and stderr line matching `retry_line` counts as one
    failed provider attempt; past `max_retries` of them the CLI's whole tree is killed (CLIs
    that retry for minutes without a setting for it). No timeout here: the runner owns limits
    and kills the tree."""
    out_path, err_path = log_dir / f"{name}.stdout", log_dir / f"{name}.stderr"
    lines: list[tuple[float, str]] = []
    retries = 0
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        text=True,
        encoding="utf-8",
        errors="replace",
    )
    lock = threading.Lock()

    def check(line: str) -> None:
        nonlocal retries
        if retry_line is None or not retry_line.search(line):
            return
        with lock:
            retries += 1
            stop = retries > max_retries
        if stop and proc.poll() is None:
            kill_tree(proc.pid)

    def drain_stderr() -> None:
        assert proc.stderr is not None
        with err_path.open("w", encoding="utf-8") as err:
            for line in proc.stderr:
                err.write(line)
                err.flush()
                check(line)

    if stdin is not None:
        threading.Thread(target=_feed, args=(proc.stdin, stdin), daemon=True).start()
    reader = threading.Thread(target=drain_stderr, daemon=True)
    reader.start()
    assert proc.stdout is not None
    with out_path.open("w", encoding="utf-8") as out:
        for line in proc.stdout:
            lines.append((time.time(), line.rstrip("\n")))
            out.write(line)
            out.flush()
            check(line)
    code = proc.wait()
    reader.join(timeout=10)
    for pipe in (proc.stdout, proc.stderr, proc.stdin):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()
    stderr = err_path.read_text(encoding="utf-8", errors="replace")
    return Run(code, lines, stderr, retries=retries, stopped=retries > max_retries)


def kill_tree(pid: int) -> None:
    """SIGKILL a process and all its descendants (CLIs that relaunch themselves ignore SIGTERM
    to the parent)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    order, todo = [], [pid]
    while todo:
        current = todo.pop()
        order.append(current)
        todo.extend(children.get(current, []))
    for target in reversed(order):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(target, signal.SIGKILL)


def _feed(pipe: Any, text: str) -> None:
    try:
        pipe.write(text)
        pipe.close()
    except (BrokenPipeError, OSError):
        pass
