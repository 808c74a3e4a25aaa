"""Fixtures of the isolation suite: a sandbox factory per real isolation, and run helpers (`Trial.run`
in a bare sandbox, `run_agent` through the real runner).

The unit layer: a SandboxSpec is built by hand, wrapped by a real plug-in, and run as a
real subprocess with exactly the spec's environment, as the runner does.
"""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from compiler.contract import Limits, Options
from harness.artifacts.records import RunRecord
from harness.sandbox.isolation import Mount, SandboxLimits, SandboxSpec, select
from harness.sandbox.isolation.base import Isolation
from harness.sandbox.isolation.limits import confine
from harness.trial import run_trial
from tests.helpers import command_agent, make_job

PYTHON = str(Path(sys.executable))
ISOLATIONS = ("bwrap", "unshare")


def require(name: str) -> Isolation:
    """The isolation, or a visible skip saying why it cannot run here."""
    iso = select(name)
    reason = iso.probe()
    if reason is not None:
        pytest.skip(f"{name} unavailable: {reason}")
    return iso


@dataclass(frozen=True)
class Outcome:
    """What a sandboxed command did."""

    returncode: int | None
    stdout: str
    stderr: str
    limits_hit: tuple[str, ...]
    timed_out: bool
    cgroups: tuple[Path, ...] = ()
    """The cgroup folders made for this command (removed once it is over)."""


@dataclass
class Trial:
    """A trial-like layout: workspace and home inside a run dir the sandbox must not see."""

    root: Path
    iso: Isolation
    workspace: Path = field(init=False)
    home: Path = field(init=False)

    def __post_init__(self) -> None:
        self.workspace = self.root / "run" / "workspace"
        self.home = self.root / "run" / "home"
        self.workspace.mkdir(parents=True)
        self.home.mkdir(parents=True)

    def spec(
        self,
        argv: Sequence[str],
        *,
        network: bool = False,
        limits: SandboxLimits | None = None,
        env: dict[str, str] | None = None,
        mounts: tuple[Mount, ...] = (),
    ) -> SandboxSpec:
        base_env = {"HOME": str(self.home), "PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
        return SandboxSpec(
            argv=list(argv),
            cwd=self.workspace,
            env={**base_env, **(env or {})},
            home=self.home,
            mounts=(
                Mount(self.workspace, self.workspace, writable=True),
                Mount(self.home, self.home, writable=True),
                *mounts,
            ),
            network=network,
            limits=limits or SandboxLimits(),
        )

    def run(self, spec: SandboxSpec, *, timeout: float = 30.0) -> Outcome:
        """Run like the runner: own session, exact env, tree killed on timeout."""
        with confine(self.iso, spec, label="test", watch=(self.workspace,)) as box:
            proc = subprocess.Popen(
                box.argv,
                env=dict(spec.env),
                cwd=spec.cwd,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                errors="replace",
                start_new_session=True,
            )
            timed_out = False
            try:
                out, err = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                os.killpg(proc.pid, signal.SIGKILL)
                out, err = proc.communicate()
            hits = box.limits_hit(proc.returncode)
        return Outcome(proc.returncode, out, err, hits, timed_out, tuple(box.cgroups.values()))

    def py(self, code: str, **kwargs: object) -> Outcome:
        """Run Python code in the sandbox."""
        timeout = float(kwargs.pop("timeout", 30.0))  # type: ignore[arg-type]
        return self.run(self.spec([PYTHON, "-c", code], **kwargs), timeout=timeout)  # type: ignore[arg-type]


@pytest.fixture(params=ISOLATIONS)
def trial(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Trial]:
    """A trial layout under each real isolation that works here."""
    yield Trial(tmp_path, require(request.param))


@pytest.fixture(params=ISOLATIONS)
def iso(request: pytest.FixtureRequest) -> str:
    """The name of each real isolation that works here (trials through the runner)."""
    require(request.param)
    return str(request.param)


@pytest.fixture
def bwrap_trial(tmp_path: Path) -> Trial:
    """A trial layout under bwrap only."""
    return Trial(tmp_path, require("bwrap"))


def run_agent(project: Path, run_dir: Path, iso: str, command: str, *, timeout_s: float = 60) -> RunRecord:
    """A trial through the real runner under `iso` whose agent runs `command`: the job names only a
    timeout, every other limit is the contract's default."""
    job = make_job(
        agent=command_agent(command),
        options=Options(isolation=iso, infra_retries=0),
        limits=Limits(timeout_s=timeout_s),
    )
    return run_trial(job, project=project, run_dir=run_dir)


TrialFactory = Callable[[str], Trial]


@dataclass(frozen=True)
class NetnsHost:
    """A host in a network namespace the test made, wired to ours by a veth pair: an address on
    this machine that is not loopback. It answers TCP (a line) and UDP (an echo)."""

    address: str
    tcp_port: int
    udp_port: int


_TEST_HOST_SERVER = r"""
import socket, sys, threading
addr = sys.argv[1]
tcp = socket.create_server((addr, 0))
udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); udp.bind((addr, 0))
def answer():
    while True:
        conn, _ = tcp.accept(); conn.sendall(b"test-host\n"); conn.close()
def echo():
    while True:
        data, peer = udp.recvfrom(512); udp.sendto(data, peer)
threading.Thread(target=answer, daemon=True).start()
threading.Thread(target=echo, daemon=True).start()
print(tcp.getsockname()[1], udp.getsockname()[1], flush=True)
sys.stdin.read()
"""
_HOSTS = itertools.count(1)


@pytest.fixture
def test_host() -> Iterator[NetnsHost]:
    """A test host in a network namespace made for this test (skips visibly without root)."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("a test host needs root and iproute2 (ip netns, veth)")
    n = next(_HOSTS)
    tag = f"{os.getpid() % 100000}x{n}"
    ns, mine, theirs = f"assay-th-{tag}", f"ath{tag}a", f"ath{tag}b"
    subnet = f"10.213.{(os.getpid() + n) % 250}"
    setup = [
        ["ip", "netns", "add", ns],
        ["ip", "link", "add", mine, "type", "veth", "peer", "name", theirs],
        ["ip", "link", "set", theirs, "netns", ns],
        ["ip", "addr", "add", f"{subnet}.1/30", "dev", mine],
        ["ip", "link", "set", mine, "up"],
        ["ip", "netns", "exec", ns, "ip", "addr", "add", f"{subnet}.2/30", "dev", theirs],
        ["ip", "netns", "exec", ns, "ip", "link", "set", theirs, "up"],
        ["ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up"],
    ]
    server: subprocess.Popen[str] | None = None
    try:
        for cmd in setup:
            done = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                pytest.skip(f"cannot make a test host ({' '.join(cmd)}): {done.stderr.strip()}")
        server = subprocess.Popen(
            ["ip", "netns", "exec", ns, sys.executable, "-c", _TEST_HOST_SERVER, f"{subnet}.2"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert server.stdout is not None
        tcp_port, udp_port = (int(x) for x in server.stdout.readline().split())
        yield NetnsHost(f"{subnet}.2", tcp_port, udp_port)
    finally:
        if server is not None:
            server.kill()
            server.communicate()
        subprocess.run(["ip", "link", "del", mine], capture_output=True, check=False)
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)


@dataclass
class _Tally:
    """Hostile-agent tests of one isolation and way in."""

    tried: int = 0
    blocked: int = 0
    skipped: int = 0
    not_blocked: list[str] = field(default_factory=list)


_ATTACKS: dict[str, _Tally] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Count the hostile-agent tests (test_attack_*) per isolation: tried, blocked, skipped. An
    attack whose set-up errored counts as tried and not blocked: nothing showed it was."""
    name = report.nodeid.rsplit("::", 1)[-1]
    if not name.startswith("test_attack_"):
        return
    if report.when != "call" and not (report.when == "setup" and not report.passed):
        return
    # Every attack names its isolation in its id (the `trial` or `iso` parameter, beside any other):
    # one that does not is counted under a label saying so, never under a bare "?".
    params = name.rsplit("[", 1)[-1].rstrip("]").split("-") if "[" in name else []
    iso = next((p for p in params if p in (*ISOLATIONS, "none")), "isolation not in the test id")
    iso += ", through the runner" if name.startswith("test_attack_e2e_") else ", direct"
    tally = _ATTACKS.setdefault(iso, _Tally())
    if report.skipped:
        tally.skipped += 1
        return
    tally.tried += 1
    if report.passed:
        tally.blocked += 1
    else:
        tally.not_blocked.append(name.split("[", 1)[0])


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print attacks tried / blocked / skipped per isolation, and each one not blocked."""
    for iso, tally in sorted(_ATTACKS.items()):
        terminalreporter.write_line(
            f"hostile-agent suite [{iso}]: {tally.tried} attacks tried, {tally.blocked} blocked"
            + (f", {tally.skipped} skipped (could not run here)" if tally.skipped else "")
        )
        for name in tally.not_blocked:
            terminalreporter.write_line(f"  NOT BLOCKED: {name}")
