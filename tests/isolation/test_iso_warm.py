"""Batch servers kept across runs (`harness.sandbox.batch_warm`) in a real sandbox: one launch serves
run after run, and nothing of one run reaches the next — files, processes, IPC, or memory."""

from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path

import pytest

from harness.sandbox import batch
from harness.sandbox.batch_warm import Servers
from harness.sandbox.identity import hand_over
from harness.sandbox.isolation import confines
from harness.sandbox.isolation.checks import CheckWrapper, check_wrapper
from harness.sandbox.neutralise import empty_tree
from tests.isolation.conftest import ISOLATIONS, require

pytestmark = pytest.mark.isolation

ENV = {"PATH": os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"]), "LANG": "C.UTF-8"}
PREFIX = "ASSAY-LEAK-"

LEAVE = """
import ctypes, os, subprocess, sys
secret = open("secret.txt").read().strip()
print(secret)  # in the run's own process, which keeps every command's output
for folder in (os.environ["HOME"], "/tmp", "/dev/shm", "/var/tmp", "."):
    with open(os.path.join(folder, "left-" + secret), "w") as fh:
        fh.write(secret)
subprocess.Popen(["sh", "-c", "exec -a " + secret + " sleep 300"], start_new_session=True)
subprocess.run(["ipcmk", "-M", "4096"], check=True, capture_output=True)
subprocess.run(["ipcmk", "-Q"], check=True, capture_output=True)
rt = ctypes.CDLL("librt.so.1", use_errno=True)
if rt.mq_open(b"/assay-leak", os.O_CREAT | os.O_RDWR, 0o600, None) < 0:
    sys.exit("mq_open: " + os.strerror(ctypes.get_errno()))
"""

SCAN = f"""
import ctypes, os, re, sys
found = []
pattern = re.compile(rb"{PREFIX}" + rb"[0-9a-f]{{32}}")
with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", buffering=0) as mem:
    for line in maps:
        span, perms = line.split()[:2]
        if "r" not in perms or line.rstrip().endswith(("[vvar]", "[vsyscall]", "[vvar_vclock]")):
            continue
        start, end = (int(x, 16) for x in span.split("-"))
        try:
            mem.seek(start)
            data = mem.read(end - start)
        except (OSError, OverflowError, ValueError):
            continue
        found += [m.decode() for m in pattern.findall(data or b"")]
if found:
    sys.exit("in this process's memory: " + found[0])
for folder in (os.environ["HOME"], "/tmp", "/dev/shm", "/var/tmp", "."):
    if any(n.startswith("left-") for n in os.listdir(folder)):
        sys.exit("left in " + folder)
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        if b"{PREFIX}" in open(f"/proc/{{pid}}/cmdline", "rb").read():
            sys.exit("a process of the last run is alive: " + pid)
    except OSError:
        pass
for table in ("shm", "msg", "sem"):
    if len(open("/proc/sysvipc/" + table).read().splitlines()) > 1:
        sys.exit("System V " + table + " left")
rt = ctypes.CDLL("librt.so.1", use_errno=True)
if rt.mq_open(b"/assay-leak", os.O_RDWR) >= 0 or os.listdir("/dev/mqueue"):
    sys.exit("a POSIX message queue left")
print("clean")
"""


class Place:
    """A scratch folder as a grading session keeps it: the same workspace folder every run."""

    def __init__(self, root: Path, name: str) -> None:
        self.ws, self.home = root / "ws", root / "home"
        self.ws.mkdir(parents=True)
        iso = require(name)
        wrap = check_wrapper(iso, home=root / "home")
        assert isinstance(wrap, CheckWrapper) and confines(iso)
        self.launch = batch.Launch(wrap=wrap, sandboxed=True, home=root / "home")

    def run(
        self,
        servers: Servers,
        files: dict[str, str],
        *argvs: tuple[str, ...],
        preload: tuple[str, ...] = ("pytest",),
    ) -> list[batch.Outcome | None]:
        for folder in (self.ws, self.home):  # what the session does before each run
            empty_tree(folder)
        for rel, text in files.items():
            (self.ws / rel).write_text(text)
        hand_over(self.ws)
        commands = [batch.Command(argv, ENV, 60) for argv in argvs]
        got = servers.run(commands, cwd=self.ws, launch=self.launch, preload=preload, output_cap=1 << 20)
        assert got is not None, servers.refused()
        return got


def _done(outcome: batch.Outcome | None) -> tuple[int | None, str]:
    assert outcome is not None
    return outcome.exit_code, (outcome.stdout + outcome.stderr).decode()


@pytest.mark.parametrize("name", ISOLATIONS)
def test_a_server_kept_across_runs_carries_nothing_from_one_run_to_the_next(
    tmp_path: Path, name: str
) -> None:
    place = Place(tmp_path, name)
    secret = PREFIX + secrets.token_hex(16)
    with Servers() as servers:
        first = place.run(
            servers,
            {"secret.txt": secret, "leave.py": LEAVE},
            ("python", "leave.py"),
            ("sh", "-c", f"grep -q {secret} secret.txt"),
        )
        assert [_done(o)[0] for o in first] == [0, 0], [_done(o) for o in first]
        assert secret in _done(first[0])[1] and first[0] is not None and first[0].forked
        # nor can a command reach the server's descriptors or environment (it is not dumpable)
        closed = "! ls /proc/1/fd /proc/$PPID/fd 2>/dev/null && ! cat /proc/1/environ 2>/dev/null"
        second = place.run(
            servers, {"scan.py": SCAN}, ("python", "scan.py"), ("sh", "-c", f"! pgrep sleep && {closed}")
        )
        assert [_done(o) for o in second] == [(0, "clean\n"), (0, "")]
        assert second[0] is not None and second[0].forked  # the scan ran in a process forked from the server
        assert servers.launches == 1  # one sandbox served both runs


@pytest.mark.parametrize("name", ISOLATIONS)
def test_runs_that_want_more_or_less_preloaded_share_one_server(tmp_path: Path, name: str) -> None:
    # a suite's runs alternate between checks that run pytest and checks that do not: one server
    # per launch serves both, once it preloads what either wanted
    place = Place(tmp_path, name)
    show = ("python", "-c", "import sys; print('pytest' in sys.modules)")
    with Servers() as servers:
        got = [place.run(servers, {}, show, preload=want)[0] for want in ((), ("pytest",), (), ("pytest",))]
        assert [_done(o)[0] for o in got] == [0, 0, 0, 0] and all(o is not None and o.forked for o in got)
        assert servers.launches == 2  # the first server had no pytest; the second has it for every run
        assert [_done(o)[1] for o in got] == ["False\n", "True\n", "True\n", "True\n"]


@pytest.mark.parametrize("name", ISOLATIONS)
def test_a_run_that_ends_its_own_process_leaves_the_next_run_a_new_sandbox(tmp_path: Path, name: str) -> None:
    place = Place(tmp_path, name)
    with Servers() as servers:
        first = place.run(servers, {}, ("sh", "-c", "touch $HOME/x; kill -9 $PPID; sleep 5"), ("true",))
        assert first[1] is None  # no report of what the run's process would have run next
        second = place.run(
            servers, {"ok.txt": "ok"}, ("sh", "-c", "test -f ok.txt && test ! -e $HOME/x"), ("false",)
        )
        assert [_done(o)[0] for o in second] == [0, 1]
        assert servers.launches == 2


@pytest.mark.parametrize("name", ISOLATIONS)
def test_no_server_is_kept_where_it_cannot_be_the_sandboxs_init(tmp_path: Path, name: str) -> None:
    place = Place(tmp_path, name)
    wrap = place.launch.wrap
    assert isinstance(wrap, CheckWrapper)

    class NoInit(CheckWrapper):  # an isolation that ignores `init`: the server is not pid 1
        def as_init(self) -> CheckWrapper:
            return self

    plain = NoInit(wrap.isolation, wrap.home, wrap.binds, wrap.cwd_map)
    launch = batch.Launch(wrap=plain, sandboxed=True, home=place.launch.home)
    commands = [batch.Command(("true",), ENV, 30)]
    with Servers() as servers:
        for _ in range(2):
            assert servers.run(commands, cwd=place.ws, launch=launch, output_cap=100) is None
        assert servers.launches == 1 and "init" in " ".join(servers.refused())
