"""The tracing shim: every invocation of a provided tool goes through the trial's tool runner.

For each executable of the cell's PATH folders (and each extra name in `trace`) the runner
writes a small stand-alone Python script of the same name into the trial's shim folder,
which goes first on the agent's PATH. The script does not run the tool and writes nothing:
it hands the invocation — argv, cwd, environment and its own stdin/stdout/stderr as file
descriptors — to the in-sandbox tool runner (`harness.trial.toolrunner`, found through
`ASSAY_TOOL_SOCKET`), which runs the real executable, relays its output and reports the row
to the harness over a channel the agent cannot write. The shim forwards signals and exits
with the tool's status. Without a runner (a command started outside a trial) it simply
executes the real tool, untraced. Stdlib only (`python -IS`): the sandbox sees no project.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

TOOLS_FILE = "tools.json"
"""Next to the shim folder: name -> {real, serve}, the only table the tool runner trusts."""

_TEMPLATE = r"""#!{python} -IS
import json, os, signal, socket, sys
REAL = {real!r}
NAME = {name!r}

def untraced(args):
    os.execv(REAL, [REAL] + args)

def main():
    args = sys.argv[1:]
    path = os.environ.get("ASSAY_TOOL_SOCKET")
    if not path:
        untraced(args)
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
    except OSError:
        untraced(args)
    fds = []
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
            fds.append(fd)
        except OSError:
            fds.append(os.open(os.devnull, os.O_RDWR))
    request = {{"tool": NAME, "argv": [NAME] + args, "cwd": os.getcwd(), "env": dict(os.environ)}}
    data = json.dumps(request).encode() + b"\n"
    sent = socket.send_fds(conn, [data], fds)
    conn.sendall(data[sent:])
    def forward(signum, frame):
        try:
            conn.sendall(b"KILL %d\n" % signum)
        except OSError:
            pass
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, forward)
    reply = conn.makefile("rb").readline().split()
    return int(reply[1]) if len(reply) == 2 and reply[0] == b"EXIT" else 126

if __name__ == "__main__":
    sys.exit(main())
"""


def _executables(folder: Path) -> Iterable[Path]:
    if not folder.is_dir():
        return
    for entry in sorted(folder.iterdir()):
        if entry.is_file() and os.access(entry, os.X_OK):
            yield entry


def write_shim(shim_bin: Path, name: str, real: Path) -> Path:
    """Write one shim script named `name` that hands invocations of `real` to the tool runner."""
    shim_bin.mkdir(parents=True, exist_ok=True)
    target = shim_bin / name
    text = _TEMPLATE.format(python=sys.executable, real=str(real), name=name)
    target.write_text(text, encoding="utf-8")
    target.chmod(0o755)
    return target


def install(
    shim_bin: Path,
    *,
    path_dirs: Sequence[Path],
    trace_names: Sequence[str],
    serve: Sequence[str],
    search_path: str,
) -> dict[str, Path]:
    """Shim every executable of `path_dirs` and every name in `trace_names`; write the runner's table.

    Args:
        shim_bin: The folder that goes first on the agent's PATH.
        path_dirs: Absolute folders the cell puts on PATH (earlier ones win).
        trace_names: More command names to trace, looked up in the path folders, then `search_path`.
        serve: Subcommands that start a line-by-line session.
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
        write_shim(shim_bin, name, real)
    write_table(shim_bin.parent / TOOLS_FILE, found, serve)
    return found


def write_table(path: Path, tools: Mapping[str, Path], serve: Iterable[str]) -> None:
    """The tool runner's table: each traced name, its real executable, the serve subcommands."""
    table = {name: {"real": str(real), "serve": list(serve)} for name, real in sorted(tools.items())}
    path.write_text(json.dumps(table, sort_keys=True), encoding="utf-8")
