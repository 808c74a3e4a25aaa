"""Fixtures of the isolation suite: a sandbox factory per real isolation, and a run helper.

The unit layer: a SandboxSpec is built by hand, wrapped by a real plug-in, and run as a
real subprocess with exactly the spec's environment, as the runner does.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from harness.sandbox.isolation import Mount, SandboxLimits, SandboxSpec, select
from harness.sandbox.isolation.base import Isolation
from harness.sandbox.isolation.limits import confine

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


@pytest.fixture
def bwrap_trial(tmp_path: Path) -> Trial:
    """A trial layout under bwrap only."""
    return Trial(tmp_path, require("bwrap"))


TrialFactory = Callable[[str], Trial]


_ATTACKS: dict[str, dict[str, int]] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Count the hostile-agent tests (test_attack_*) per isolation: tried, blocked."""
    name = report.nodeid.rsplit("::", 1)[-1]
    if not name.startswith("test_attack_") or report.when != "call":
        return
    iso = name.rsplit("[", 1)[-1].rstrip("]") if "[" in name else "?"
    iso += ", through the runner" if name.startswith("test_attack_e2e_") else ", direct"
    counts = _ATTACKS.setdefault(iso, {"tried": 0, "blocked": 0})
    counts["tried"] += 1
    counts["blocked"] += int(report.passed)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print attacks tried / blocked per isolation."""
    for iso, counts in sorted(_ATTACKS.items()):
        terminalreporter.write_line(
            f"hostile-agent suite [{iso}]: {counts['tried']} attacks tried, {counts['blocked']} blocked"
        )
