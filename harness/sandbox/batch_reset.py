"""What the commands of a batch leave behind, put back: the second half of the batch server's source.

`harness.sandbox.batch.server_source` runs this file after `batch_server.py` as one `python -c`
program inside the sandbox (never imported there; the standard library only). Between two
commands, and between two runs of a server kept across runs, the server ends every process but
its own (`end_all`), puts the writable folders back as they were (`capture` then `reset`:
contents, modes and times, from a copy in its memory) and empties the sandbox's IPC namespace
(`clean_ipc`: System V shared memory, message queues and semaphores, and the POSIX message queues
where they are shown at /dev/mqueue), the state a file reset does not reach.
"""

import contextlib
import ctypes
import errno
import os
import signal
import stat
from collections.abc import Callable

MAX_BYTES = 64 << 20
"""A tree bigger than this is not held in memory: the server refuses and the caller runs one by one."""
MAX_ENTRIES = 20000
MQUEUE = "/dev/mqueue"
"""Where a sandbox shows its POSIX message queues (a server kept across runs asks for it)."""
IPC_RMID = 0
_GONE = (errno.EINVAL, errno.EIDRM)

Entry = tuple[str, int, bytes, int]
"""kind ("d", "f", "l"), mode, content or link target, mtime_ns."""


class TooBig(Exception):
    pass


def capture(root: str) -> dict[str, Entry]:
    """Every entry under root (not crossing into other mounts), content included."""
    top = os.lstat(root)
    found: dict[str, Entry] = {"": ("d", stat.S_IMODE(top.st_mode), b"", top.st_mtime_ns)}
    total = 0
    device = top.st_dev
    stack = [""]
    while stack:
        rel = stack.pop()
        for name in sorted(os.listdir(os.path.join(root, rel) if rel else root)):
            sub = os.path.join(rel, name) if rel else name
            path = os.path.join(root, sub)
            st = os.lstat(path)
            if st.st_dev != device:
                continue  # a mount inside (read-only toolchain, a scenario mount): not ours to reset
            if stat.S_ISDIR(st.st_mode):
                found[sub] = ("d", stat.S_IMODE(st.st_mode), b"", st.st_mtime_ns)
                stack.append(sub)
            elif stat.S_ISLNK(st.st_mode):
                found[sub] = ("l", 0, os.fsencode(os.readlink(path)), 0)
            elif stat.S_ISREG(st.st_mode):
                with open(path, "rb") as fh:
                    data = fh.read()
                total += len(data)
                found[sub] = ("f", stat.S_IMODE(st.st_mode), data, st.st_mtime_ns)
            else:
                found[sub] = ("o", 0, b"", 0)  # a FIFO or socket the batch began with: removed on reset
            if total > MAX_BYTES or len(found) > MAX_ENTRIES:
                raise TooBig(root)
    return found


def _remove(path: str) -> None:
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):
        os.unlink(path)
        return
    _open_up(path)
    for name in os.listdir(path):
        _remove(os.path.join(path, name))
    os.rmdir(path)


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "d"
    if stat.S_ISLNK(mode):
        return "l"
    return "f" if stat.S_ISREG(mode) else "o"


def reset(root: str, want: dict[str, Entry]) -> None:
    """Put root back to `want`: extra entries removed, changed ones rewritten, modes and times set."""
    device = os.lstat(root).st_dev
    stack = [""]
    while stack:  # remove what was not there, and what changed kind
        rel = stack.pop()
        folder = os.path.join(root, rel) if rel else root
        _open_up(folder)
        for name in os.listdir(folder):
            sub = os.path.join(rel, name) if rel else name
            st = os.lstat(os.path.join(root, sub))
            if st.st_dev != device:
                continue
            kind, had = _kind(st.st_mode), want.get(sub)
            if had is None or had[0] != kind or kind == "o":
                _remove(os.path.join(root, sub))
            elif kind == "d":
                stack.append(sub)
    for sub, (kind, _mode, data, _mtime) in sorted(want.items()):  # parents before children
        path = os.path.join(root, sub)
        if kind == "d" and not os.path.lexists(path):
            os.mkdir(path, 0o700)
        elif kind == "l" and (not os.path.lexists(path) or os.fsencode(os.readlink(path)) != data):
            if os.path.lexists(path):
                os.unlink(path)
            os.symlink(data, path)
        elif kind == "f":
            same = False
            if os.path.lexists(path):
                os.chmod(path, 0o600)
                with open(path, "rb") as fh:
                    same = fh.read() == data
            if not same:
                with open(path, "wb") as fh:
                    fh.write(data)
    for sub, (kind, mode, _data, mtime) in sorted(want.items(), reverse=True):  # children first
        path = os.path.join(root, sub)
        if kind in ("d", "f") and os.lstat(path).st_uid == os.getuid():  # /tmp itself is root's
            os.chmod(path, mode)
            os.utime(path, ns=(mtime, mtime), follow_symlinks=False)


def _open_up(folder: str) -> None:
    """Let the server list and change a folder of its own a command made unreadable."""
    st = os.lstat(folder)
    if st.st_uid == os.getuid() and stat.S_IMODE(st.st_mode) & 0o700 != 0o700:
        os.chmod(folder, stat.S_IMODE(st.st_mode) | 0o700)


def end_all() -> None:
    """Kill every process of the namespace but the server and its init, and reap them."""
    while True:
        with contextlib.suppress(ProcessLookupError):
            os.kill(-1, signal.SIGKILL)
        try:
            while os.waitpid(-1, 0):
                pass
        except ChildProcessError:
            return


def reap(pid: int) -> int:
    """Wait for `pid` (reaping any other child meanwhile); its wait status, -1 when it is gone."""
    while True:
        try:
            got, status = os.waitpid(-1, 0)
        except ChildProcessError:
            return -1
        if got == pid:
            return status


def mqueue_shown() -> bool:
    """Whether the sandbox's POSIX message queues are a filesystem of their own at MQUEUE."""
    try:
        return os.stat(MQUEUE).st_dev != os.stat(os.path.dirname(MQUEUE)).st_dev
    except OSError:
        return False


def clean_ipc() -> None:
    """Remove every IPC object of the sandbox's own IPC namespace (the caller made sure it is its own).

    Every process in the sandbox runs as the server's uid, the creator of every object, which may
    always remove it. An object that cannot be removed raises: the caller must not go on."""
    libc = ctypes.CDLL(None, use_errno=True)
    removers: dict[str, Callable[[int], int]] = {
        "shm": lambda ident: int(libc.shmctl(ident, IPC_RMID, None)),
        "msg": lambda ident: int(libc.msgctl(ident, IPC_RMID, None)),
        "sem": lambda ident: int(libc.semctl(ident, 0, IPC_RMID)),
    }
    for table, remove in removers.items():
        try:
            with open(f"/proc/sysvipc/{table}") as fh:
                rows = fh.read().splitlines()[1:]
        except FileNotFoundError:
            continue  # a kernel without System V IPC
        for row in rows:
            if remove(int(row.split()[1])) != 0 and ctypes.get_errno() not in _GONE:
                err = ctypes.get_errno()
                raise OSError(err, f"cannot remove System V {table} {row.split()[1]}: {os.strerror(err)}")
    if mqueue_shown():
        for name in os.listdir(MQUEUE):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(MQUEUE, name))
